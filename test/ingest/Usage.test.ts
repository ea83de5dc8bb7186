import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { InvalidAdminRequest } from "../../src/audiences/AudienceErrors.js"
import { UnknownDestination } from "../../src/domain/DestinationErrors.js"
import { UnknownSource } from "../../src/domain/IngestErrors.js"
import { layerSqlite } from "../../src/store/index.js"
import { startServer } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { postBatch, storeVariants } from "./FiltersUsageSupport.js"

/** Usage counters per source and UTC day (REFERENCE §11), through `GET /admin/sources/{id}/usage` and `RelayMessages.usage`. */

const writeKey = "wk_usage_tests_0123"

const zeros = { apiCalls: 0, messages: 0, filtered: 0, delivered: 0, dead: 0, averageLatencyMs: null }

const putSource = (baseUrl: string, url: string, filters?: ReadonlyArray<unknown>) =>
  call(baseUrl, "PUT", "/admin/sources/web", {
    body: { writeKey, webhooks: { enabled: true, endpoints: [{ url }], ...(filters !== undefined && { filters }) } }
  })

describe("usage endpoint", () => {
  it.effect("lists the asked days oldest first, today (by Clock) last, days without traffic as zeros", () =>
    Effect.gen(function*() {
      // Day 1 in one run of the server, day 3 in the next on the same file: moving the TestClock two
      // days under a running server would make its periodic fibers (backlog gauge…) tick through them.
      const directory = yield* tempDirectory
      const store = () => layerSqlite({ directory })
      yield* TestClock.setTime(Date.parse("2026-11-19T10:00:00.000Z"))
      yield* Effect.scoped(Effect.gen(function*() {
        const first = yield* startApp({ dispatch: false, store: store() })
        expect((yield* putSource(first.baseUrl, "https://example.com/hook")).status).toBe(200)
        expect(yield* track(first.baseUrl, writeKey, { userId: "u", event: "Day One" })).toBe(200)
      }))

      // Day 3, one millisecond before it ends: one request of two messages, and one library call.
      yield* TestClock.setTime(Date.parse("2026-11-21T23:59:59.999Z"))
      const app = yield* startApp({ dispatch: false, store: store() })
      expect(
        yield* postBatch(app.baseUrl, writeKey, [
          { type: "track", userId: "u", event: "A" },
          { type: "identify", userId: "u" }
        ])
      ).toBe(200)
      yield* app.relay.ingest("web", [{ type: "track", userId: "u", event: "Library" }])

      const answer = yield* call(app.baseUrl, "GET", "/admin/sources/web/usage?days=3")
      expect(answer.status).toBe(200)
      expect(answer.body).toStrictEqual({
        sourceId: "web",
        days: [
          { ...zeros, day: "2026-11-19", apiCalls: 1, messages: 1 },
          { ...zeros, day: "2026-11-20" },
          { ...zeros, day: "2026-11-21", apiCalls: 1, messages: 3 }
        ]
      })
      expect(yield* app.relayMessages.usage("web", 3)).toStrictEqual(answer.body.days)

      // 30 days by default, ending today.
      const month = yield* call(app.baseUrl, "GET", "/admin/sources/web/usage")
      expect(month.body.days).toHaveLength(30)
      expect(month.body.days[0].day).toBe("2026-10-23")
      expect(month.body.days.at(-1)).toStrictEqual(answer.body.days[2])
      expect(month.body.days.slice(0, 27)).toStrictEqual(
        Array.from({ length: 27 }, (_, i) => ({ ...zeros, day: month.body.days[i].day }))
      )
      expect((yield* app.relayMessages.usage("web")).length).toBe(30)
      const year = yield* call(app.baseUrl, "GET", "/admin/sources/web/usage?days=366")
      expect(year.body.days).toHaveLength(366)
      expect(year.body.days[0].day).toBe("2025-11-21")

      // The next UTC day starts a new row.
      yield* TestClock.adjust("1 millis")
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/web/usage?days=1")).body.days).toStrictEqual([
        { ...zeros, day: "2026-11-22" }
      ])
    }))

  it.live("refuses days outside 1..366 naming days, and answers 404 for an unknown source", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      expect((yield* putSource(app.baseUrl, "https://example.com/hook")).status).toBe(200)
      for (const days of ["0", "367", "abc", "1.5", "-1", "1e2", "30&days=2"]) {
        const answer = yield* call(app.baseUrl, "GET", `/admin/sources/web/usage?days=${days}`)
        expect(answer.status, days).toBe(400)
        expect(answer.body, days).toMatchObject({
          success: false,
          code: "invalid_request",
          errors: [{ path: "days", message: "must be a whole number from 1 to 366" }]
        })
      }
      const unknown = yield* call(app.baseUrl, "GET", "/admin/sources/nope/usage")
      expect(unknown.status).toBe(404)
      expect(unknown.body).toMatchObject({ success: false, code: "not_found" })
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/web/usage", { authorization: null })).status).toBe(401)

      expect(yield* Effect.flip(app.relayMessages.usage("nope"))).toStrictEqual(new UnknownSource({ sourceId: "nope" }))
      expect(yield* Effect.flip(app.relayMessages.usage("web", 0))).toBeInstanceOf(InvalidAdminRequest)
    }))
})

describe("usage counts what a run actually did", () => {
  for (const variant of storeVariants) {
    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: N messages in K requests with F filtered, then one dead letter; latency of the deliveries`,
      () =>
        Effect.gen(function*() {
          // Answers after 25 ms, so every delivery's latency is at least that; 410 (permanent) for "doomed".
          const receiver = yield* startServer((request, response) => {
            const messageId = (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId
            setTimeout(() => response.writeHead(messageId === "doomed" ? 410 : 200).end(), 25)
          })
          const app = yield* startApp({ store: variant.store() })
          const filters = [{ if: { event: ["Filtered"] }, then: "drop" }]
          expect((yield* putSource(app.baseUrl, `${receiver.url}/hook`, filters)).status).toBe(200)
          const message = (i: number, event = "Kept") => ({ type: "track", userId: `u${i}`, event, messageId: `m${i}` })

          // K = 3 requests, N = 10 messages, F = 3 filtered.
          expect(
            yield* postBatch(app.baseUrl, writeKey, [
              message(1),
              message(2),
              message(3, "Filtered"),
              message(4),
              message(5)
            ])
          ).toBe(200)
          expect(
            yield* postBatch(app.baseUrl, writeKey, [
              message(6, "Filtered"),
              message(7),
              message(8, "Filtered"),
              message(9)
            ])
          ).toBe(200)
          expect(yield* track(app.baseUrl, writeKey, message(10))).toBe(200)

          const today = Effect.map(
            call(app.baseUrl, "GET", "/admin/sources/web/usage?days=1"),
            (answer) => answer.body.days[0] as Record<string, unknown>
          )
          const afterRun = yield* pollUntil(today, (day) => day.delivered === 7, "7 deliveries counted")
          expect(receiver.requests.length).toBe(7)
          expect(afterRun).toMatchObject({ apiCalls: 3, messages: 10, filtered: 3, delivered: 7, dead: 0 })
          const latency = afterRun.averageLatencyMs as number
          expect(Number.isInteger(latency)).toBe(true)
          expect(latency).toBeGreaterThanOrEqual(25)
          expect(latency).toBeLessThan(10_000)

          // One more request whose message the receiver refuses for good: one dead letter.
          expect(yield* track(app.baseUrl, writeKey, { userId: "u", event: "Kept", messageId: "doomed" })).toBe(200)
          const afterDead = yield* pollUntil(today, (day) => day.dead === 1, "the dead letter counted")
          expect(afterDead).toStrictEqual({
            day: afterRun.day,
            apiCalls: 4,
            messages: 11,
            filtered: 3,
            delivered: 7,
            dead: 1,
            // A dead letter has no delivery latency.
            averageLatencyMs: latency
          })
          expect(yield* app.relayMessages.backlog).toMatchObject({ pending: 0, delivering: 0, delivered: 7, dead: 1 })
        })
    )
  }
})

describe("usage per destination", () => {
  for (const variant of storeVariants) {
    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: each destination's deliveries and dead letters; the source's calls and messages`,
      () =>
        Effect.gen(function*() {
          const receiver = yield* startServer((request, response) => {
            response.writeHead(request.url === "/gone" ? 410 : 200).end()
          })
          const app = yield* startApp({ store: variant.store() })
          const destination = (id: string, path: string, subscribe?: unknown) => ({
            id,
            enabled: true,
            endpoints: [{ url: `${receiver.url}${path}` }],
            ...(subscribe !== undefined && { subscribe })
          })
          const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
            body: {
              writeKey,
              destinations: [
                destination("webhooks", "/in"),
                destination("crm", "/crm", { types: ["track"] }),
                destination("warehouse", "/gone")
              ]
            }
          })
          expect(put.status).toBe(200)
          expect(
            yield* postBatch(app.baseUrl, writeKey, [
              { type: "track", userId: "u", event: "A" },
              { type: "track", userId: "u", event: "B" },
              { type: "identify", userId: "u" }
            ])
          ).toBe(200)

          const today = (query = "") =>
            Effect.map(
              call(app.baseUrl, "GET", `/admin/sources/web/usage?days=1${query}`),
              (answer) => answer.body as { destinationId?: string; days: ReadonlyArray<Record<string, unknown>> }
            )
          const source = yield* pollUntil(
            Effect.map(today(), (body) => body.days[0]!),
            (day) => day.delivered === 5 && day.dead === 3,
            "5 deliveries and 3 dead letters counted"
          )
          expect(source).toMatchObject({ apiCalls: 1, messages: 3, filtered: 0 })
          const counts = (body: { days: ReadonlyArray<Record<string, unknown>> }) => {
            const { apiCalls, dead, delivered, messages } = body.days[0]!
            return { apiCalls, messages, delivered, dead }
          }
          const webhooks = yield* today("&destinationId=webhooks")
          expect(webhooks.destinationId).toBe("webhooks")
          expect(counts(webhooks)).toStrictEqual({ apiCalls: 1, messages: 3, delivered: 3, dead: 0 })
          expect(counts(yield* today("&destinationId=crm"))).toStrictEqual({
            apiCalls: 1,
            messages: 3,
            delivered: 2,
            dead: 0
          })
          const warehouse = yield* today("&destinationId=warehouse")
          expect(counts(warehouse)).toStrictEqual({ apiCalls: 1, messages: 3, delivered: 0, dead: 3 })
          expect(warehouse.days[0]!.averageLatencyMs).toBeNull()
          expect((yield* app.relayMessages.usage("web", 1, "crm"))[0]).toMatchObject({ delivered: 2, dead: 0 })

          const unknown = yield* call(app.baseUrl, "GET", "/admin/sources/web/usage?destinationId=nope")
          expect(unknown.status).toBe(404)
          expect(unknown.body).toMatchObject({
            success: false,
            code: "not_found",
            message: expect.stringContaining("nope")
          })
          expect(yield* Effect.flip(app.relayMessages.usage("web", 1, "nope"))).toStrictEqual(
            new UnknownDestination({ sourceId: "web", destinationId: "nope" })
          )
        })
    )

    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: the jobs a destination's deletion dead-letters are counted and reported on the outcomes`,
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          const destination = (id: string) => ({ id, enabled: true, endpoints: [{ url: `https://${id}.example.com` }] })
          const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", {
            body: { writeKey, destinations: [destination("webhooks"), destination("crm")] }
          })
          expect(put.status).toBe(200)
          const outcomes = yield* Stream.runCollect(Stream.take(app.relay.outcomes, 2)).pipe(Effect.forkChild)
          yield* Effect.sleep("10 millis")
          yield* app.relay.ingest("web", [
            { type: "track", userId: "u", event: "A", messageId: "m1" },
            { type: "track", userId: "u", event: "B", messageId: "m2" }
          ])
          expect((yield* call(app.baseUrl, "DELETE", "/admin/sources/web/destinations/crm")).status).toBe(204)

          const reported = yield* Fiber.join(outcomes).pipe(Effect.timeout("5 seconds"))
          expect(reported.map((o) => [o.messageId, o.status, o.error]).sort()).toStrictEqual([
            ["m1", "dead", "destination deleted"],
            ["m2", "dead", "destination deleted"]
          ])
          const [day] = yield* app.relayMessages.usage("web", 1)
          expect(day).toMatchObject({ messages: 2, delivered: 0, dead: 2 })
          expect((yield* app.relayMessages.usage("web", 1, "webhooks"))[0]).toMatchObject({ delivered: 0, dead: 0 })
        })
    )
  }
})
