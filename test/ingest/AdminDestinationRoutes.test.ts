import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startApp } from "../support/app.js"
import { call } from "../support/http.js"
import { storeVariants } from "./FiltersUsageSupport.js"

/**
 * `/admin/sources/{id}/destinations` (REFERENCE §1a, §7) on both stores: a destination put, listed, deleted (its pending
 * jobs dead-lettered, not replayable until a destination of that id exists again) and its secret rotated, the others
 * untouched; bad input refused naming the field, nothing stored.
 */

const writeKey = "wk_destination_routes"
const webhooks = { enabled: true, signing: "standard", endpoints: [{ url: "https://hooks.example.com/in" }] }
const crm = { enabled: true, sharedSecret: "crm-secret-0123456789", endpoints: [{ url: "https://crm.example.com/in" }] }
const warehouse = { enabled: true, signing: "standard", endpoints: [{ url: "https://dw.example.com/in" }] }

const ids = (body: { destinations: ReadonlyArray<{ id: string }> }) => body.destinations.map(({ id }) => id)

for (const variant of storeVariants) {
  describe(`admin API: a source's destinations one at a time (${variant.name})`, () => {
    it.live.skipIf(variant.skip !== undefined)(
      "PUT creates (201) or replaces (200) one destination; GET lists them; bad input names the field",
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          const base = "/admin/sources/shop/destinations"
          expect((yield* call(app.baseUrl, "GET", base)).status).toBe(404)
          expect((yield* call(app.baseUrl, "PUT", `${base}/crm`, { body: crm })).status).toBe(404)
          yield* call(app.baseUrl, "PUT", "/admin/sources/shop", { body: { writeKey, webhooks } })
          expect(ids((yield* call(app.baseUrl, "GET", base)).body)).toStrictEqual(["webhooks"])

          const created = yield* call(app.baseUrl, "PUT", `${base}/crm`, { body: crm })
          expect(created.status).toBe(201)
          expect(created.body).toMatchObject({ id: "crm", enabled: true, hasSharedSecret: true })
          expect(JSON.stringify(created.body)).not.toContain(crm.sharedSecret)
          const dw = yield* call(app.baseUrl, "PUT", `${base}/warehouse`, { body: warehouse })
          expect(dw.status).toBe(201)
          expect(dw.body.generatedSecret).toMatch(/^whsec_/)
          expect(JSON.stringify(dw.body.signingSecrets)).not.toContain(dw.body.generatedSecret.slice(12))

          // A replacement keeps the secret it does not name, and the others stay as they were.
          const replaced = yield* call(app.baseUrl, "PUT", `${base}/warehouse`, {
            body: { ...warehouse, name: "Warehouse" }
          })
          expect(replaced.status).toBe(200)
          expect(replaced.body.generatedSecret).toBeUndefined()
          expect(replaced.body.signingSecrets).toStrictEqual(dw.body.signingSecrets)
          const listed = yield* call(app.baseUrl, "GET", base)
          expect(ids(listed.body)).toStrictEqual(["webhooks", "crm", "warehouse"])
          expect(listed.body.destinations[2]).toStrictEqual({ ...replaced.body })
          const source = yield* call(app.baseUrl, "GET", "/admin/sources/shop")
          expect(source.body.webhooks.signingSecrets).toHaveLength(1)
          expect(source.body.destinations.map(({ id }: { id: string }) => id)).toStrictEqual(["crm", "warehouse"])

          // Refusals name the field and store nothing.
          const refusals = [
            [`${base}/Not%20A%20Slug`, crm, "destinationId"],
            [`${base}/crm`, { ...crm, endpoints: [{ url: "ftp://crm.example.com" }] }, "endpoints[0].url"],
            [`${base}/crm`, { ...crm, subscribe: { events: [42] } }, "subscribe.events[0]"],
            [`${base}/crm`, { ...crm, timeout: "2 minutes" }, "timeout"],
            [`${base}/crm`, [crm], ""]
          ] as const
          for (const [path, body, field] of refusals) {
            const refused = yield* call(app.baseUrl, "PUT", path, { body })
            expect(refused.status, path).toBe(400)
            expect(refused.body.errors.map((issue: { path: string }) => issue.path)).toContain(field)
          }
          expect((yield* call(app.baseUrl, "GET", base)).body).toStrictEqual(listed.body)

          // At most 20 destinations: the 21st is refused, a replacement is not.
          for (let i = 3; i < 20; i++) yield* call(app.baseUrl, "PUT", `${base}/d${i}`, { body: crm })
          const full = yield* call(app.baseUrl, "PUT", `${base}/d20`, { body: crm })
          expect(full.status).toBe(400)
          expect(full.body.errors[0].path).toBe("destinationId")
          expect((yield* call(app.baseUrl, "PUT", `${base}/d3`, { body: warehouse })).status).toBe(200)
          expect(ids((yield* call(app.baseUrl, "GET", base)).body)).toHaveLength(20)
        }),
      30_000
    )

    it.live.skipIf(variant.skip !== undefined)(
      "DELETE dead-letters the destination's pending jobs; they replay only once a destination of that id is back",
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
            body: { writeKey, webhooks, destinations: [{ id: "crm", ...crm }] }
          })
          yield* app.relay.ingest("shop", [
            { type: "track", userId: "u", event: "A", messageId: "m-1" },
            { type: "track", userId: "u", event: "B", messageId: "m-2" }
          ])
          const removed = yield* call(app.baseUrl, "DELETE", "/admin/sources/shop/destinations/crm")
          expect(removed.status).toBe(204)
          expect((yield* call(app.baseUrl, "DELETE", "/admin/sources/shop/destinations/crm")).status).toBe(404)
          expect((yield* call(app.baseUrl, "DELETE", "/admin/sources/nowhere/destinations/crm")).status).toBe(404)
          expect(ids((yield* call(app.baseUrl, "GET", "/admin/sources/shop/destinations")).body))
            .toStrictEqual(["webhooks"])

          const jobs = yield* app.relayMessages.messageJobs("m-1")
          expect(jobs.map((job) => `${job.destinationId} ${job.status} ${job.lastError}`).sort()).toStrictEqual([
            "crm dead destination deleted",
            "webhooks pending null"
          ])
          const dead = yield* app.relayMessages.deadLetters({ sourceId: "shop", limit: 10 })
          expect(dead).toHaveLength(2)
          const usage = yield* call(app.baseUrl, "GET", "/admin/sources/shop/usage?days=1")
          expect(usage.body.days[0].dead).toBe(2)

          // Not replayable while the source has no destination `crm`, one by one or in bulk.
          const refused = yield* call(app.baseUrl, "POST", `/admin/dead-letters/${dead[0]!.id}/replay`)
          expect(refused.status).toBe(409)
          expect(refused.body.code).toBe("destination_deleted")
          const bulk = yield* call(app.baseUrl, "POST", "/admin/dead-letters/replay", { body: { sourceId: "shop" } })
          expect(bulk.body).toStrictEqual({ dryRun: false, count: 0 })
          expect(yield* app.relayMessages.deadLetters({ sourceId: "shop", limit: 10 })).toHaveLength(2)

          expect(
            (yield* call(app.baseUrl, "PUT", "/admin/sources/shop/destinations/crm", { body: crm })).status
          ).toBe(201)
          const replayed = yield* call(app.baseUrl, "POST", `/admin/dead-letters/${dead[0]!.id}/replay`)
          expect(replayed.status).toBe(202)
          const again = yield* call(app.baseUrl, "POST", "/admin/dead-letters/replay", { body: { sourceId: "shop" } })
          expect(again.body).toStrictEqual({ dryRun: false, count: 1 })
          expect(yield* app.relayMessages.deadLetters({ sourceId: "shop", limit: 10 })).toHaveLength(0)
        }),
      30_000
    )

    it.live.skipIf(variant.skip !== undefined)(
      "rotating one destination's secret leaves the others; the source's rotation still rotates `webhooks`",
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
            body: { writeKey, webhooks, destinations: [{ id: "warehouse", ...warehouse }, { id: "crm", ...crm }] }
          })
          const before = (yield* call(app.baseUrl, "GET", "/admin/sources/shop")).body
          const path = "/admin/sources/shop/destinations/warehouse/secrets/rotate"
          const rotated = yield* call(app.baseUrl, "POST", path, { body: { keepOldFor: "1 hour" } })
          expect(rotated.status).toBe(200)
          expect(rotated.body.secret).toMatch(/^whsec_/)
          expect(rotated.body.signingSecrets.map(({ id }: { id: string }) => id)).toStrictEqual([
            rotated.body.id,
            before.destinations[0].signingSecrets[0].id
          ])
          const after = (yield* call(app.baseUrl, "GET", "/admin/sources/shop")).body
          expect(after.webhooks).toStrictEqual(before.webhooks)
          expect(after.destinations[1]).toStrictEqual(before.destinations[1])
          expect(after.destinations[0].signingSecrets).toStrictEqual(rotated.body.signingSecrets)

          const own = yield* call(app.baseUrl, "POST", "/admin/sources/shop/secrets/rotate")
          expect(own.status).toBe(200)
          expect(own.body.signingSecrets[1].id).toBe(before.webhooks.signingSecrets[0].id)
          expect((yield* call(app.baseUrl, "GET", "/admin/sources/shop")).body.destinations[0].signingSecrets)
            .toStrictEqual(rotated.body.signingSecrets)

          const bad = yield* call(app.baseUrl, "POST", path, { body: { keepOldFor: "soon" } })
          expect(bad.status).toBe(400)
          expect(bad.body.errors[0].path).toBe("keepOldFor")
          expect((yield* call(app.baseUrl, "POST", "/admin/sources/shop/destinations/nope/secrets/rotate")).status)
            .toBe(404)
        }),
      30_000
    )
  })
}
