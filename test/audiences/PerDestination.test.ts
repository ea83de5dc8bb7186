import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServer, waitUntil } from "../delivery/support.js"
import { storeVariants } from "../ingest/FiltersUsageSupport.js"
import { startApp } from "../support/app.js"
import { admin, parsed, pollUntil } from "./support.js"

/**
 * A source with several destinations (REFERENCE §1a, §5, §6): a delete notice goes to every enabled destination,
 * whatever it subscribes to; an audience's or a computed trait's identifies only where identifies are subscribed.
 */

const setup = (store: (typeof storeVariants)[number]["store"]) =>
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp({ store: store() })
    const destination = (
      id: string,
      subscribe?: { readonly types?: ReadonlyArray<string>; readonly events?: ReadonlyArray<string> },
      enabled = true
    ) => ({
      id,
      enabled,
      endpoints: [{ url: `${receiver.url}/${id}` }],
      ...(subscribe !== undefined && { subscribe })
    })
    yield* app.relaySources.putSource({
      id: "web",
      writeKey: "wk_web_destinations",
      destinations: [
        destination("webhooks", { types: ["track"] }),
        destination("crm", { types: ["identify"] }),
        destination("warehouse", { types: ["track"], events: ["Ordered"] }),
        destination("archive", undefined, false)
      ]
    })
    /** The paths the receiver was posted to, with each body's type and user, sorted. */
    const received = () =>
      receiver.requests.map((request) => {
        const body = parsed(request)
        return `${request.url} ${body.type} ${body.userId}`
      }).sort()
    return { app, receiver, received }
  })

for (const variant of storeVariants) {
  describe(`several destinations: deletions and audiences (${variant.name})`, () => {
    it.live.skipIf(variant.skip !== undefined)(
      "a delete notice reaches every enabled destination, whatever it subscribes to; each is tracked",
      () =>
        Effect.gen(function*() {
          const { app, receiver, received } = yield* setup(variant.store)
          const created = yield* admin(app.baseUrl, "POST", "/admin/deletions", { body: { userId: "u1" } })
          expect(created.status).toBe(202)
          yield* waitUntil(() => receiver.requests.length >= 3, "three notices")
          const done = (yield* pollUntil(
            admin(app.baseUrl, "GET", `/admin/deletions/${created.body.id}`),
            (answer) => answer.body.notifications.every((n: { status: string }) => n.status === "delivered"),
            "every notice delivered"
          )).body
          // In the source's order; the disabled destination is not notified.
          expect(done.notifications.map((n: { sourceId: string; destinationId: string }) => [
            n.sourceId,
            n.destinationId
          ])).toStrictEqual([["web", "webhooks"], ["web", "crm"], ["web", "warehouse"]])
          yield* Effect.sleep("200 millis")
          expect(received()).toStrictEqual(["/crm delete u1", "/warehouse delete u1", "/webhooks delete u1"])
          const jobs = yield* admin(app.baseUrl, "GET", `/admin/messages/${created.body.id}`)
          expect(jobs.body.jobs.map((job: { destinationId: string }) => job.destinationId).sort()).toStrictEqual([
            "crm",
            "warehouse",
            "webhooks"
          ])
        })
    )

    it.live.skipIf(variant.skip !== undefined)(
      "an audience's and a computed trait's identifies go only where identifies are subscribed",
      () =>
        Effect.gen(function*() {
          const { app, receiver, received } = yield* setup(variant.store)
          const synced = yield* admin(app.baseUrl, "PUT", "/admin/sources/web/audiences/VIP", {
            body: { userIds: ["u1", "u2"] }
          })
          expect(synced.status).toBe(200)
          expect(synced.body).toMatchObject({ added: 2, removed: 0 })
          const traits = yield* admin(app.baseUrl, "PUT", "/admin/sources/web/traits/plan", {
            body: { values: { u3: "gold" } }
          })
          expect(traits.status).toBe(200)
          yield* waitUntil(() => receiver.requests.length >= 3, "three identifies")
          yield* Effect.sleep("200 millis")
          expect(received()).toStrictEqual(["/crm identify u1", "/crm identify u2", "/crm identify u3"])
          expect(receiver.requests.map((request) => parsed(request).traits).filter((t) => "plan" in t)).toStrictEqual([
            { plan: "gold" }
          ])
        })
    )
  })
}
