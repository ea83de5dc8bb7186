import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { postBatch, storeVariants } from "./FiltersUsageSupport.js"

/**
 * Destination filters (REFERENCE §10) end to end: set through the admin API, applied by HTTP ingest
 * and `Relay.ingest` alike; a filtered message is answered 200, creates no job, reaches no
 * receiver, and is counted as `messages` and `filtered` (REFERENCE §11).
 */

const writeKey = "wk_filters_tests_0123"

const filters = [
  { if: { type: ["page"] }, then: "drop" },
  { if: { event: ["Debug"] }, then: "drop" },
  { if: { properties: { "env.name": "test" } }, then: "drop" },
  { if: { type: ["track"], event: ["Order"], properties: { "test": true } }, then: "drop" }
]

/** [what, message, dropped]: each condition alone, the combination, and near misses. */
const cases: ReadonlyArray<readonly [string, Record<string, unknown>, boolean]> = [
  ["type", { type: "page", name: "Home" }, true],
  ["event", { type: "track", event: "Debug" }, true],
  ["nested a.b path", { type: "track", event: "Signed Up", properties: { env: { name: "test", x: 1 } } }, true],
  ["all three conditions", { type: "track", event: "Order", properties: { test: true } }, true],
  ["a.b with another value", { type: "track", event: "Signed Up", properties: { env: { name: "prod" } } }, false],
  [
    "a.b with a value of another type",
    { type: "track", event: "Signed Up", properties: { env: { name: ["test"] } } },
    false
  ],
  ["a.b missing", { type: "track", event: "Signed Up", properties: { env: {} } }, false],
  ["two of three conditions", { type: "track", event: "Order", properties: { test: "true" } }, false],
  ["another type", { type: "screen", name: "Settings" }, false],
  ["the path in traits, not properties", { type: "identify", traits: { env: { name: "test" } } }, false]
]

const batchOf = (prefix: string) =>
  cases.map(([what, message], i) => ({ ...message, userId: "filter-user", messageId: `${prefix}-${i}`, what }))

const expectedDelivered = (prefix: string) =>
  cases.flatMap(([, , dropped], i) => (dropped ? [] : [`${prefix}-${i}`])).sort()
const expectedFiltered = (prefix: string) => cases.flatMap(([, , dropped], i) => (dropped ? [`${prefix}-${i}`] : []))

const setup = (store: (typeof storeVariants)[number]["store"]) =>
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp({ store: store() })
    const hook = `${receiver.url}/hook`
    const put = (body: unknown) => call(app.baseUrl, "PUT", "/admin/sources/web", { body })
    const settings = (extra: Record<string, unknown>) => ({
      writeKey,
      webhooks: { enabled: true, endpoints: [{ url: hook }], ...extra }
    })
    const receivedIds = () =>
      receiver.requests.map((request) => (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId)
    const today = Effect.map(
      call(app.baseUrl, "GET", "/admin/sources/web/usage?days=1"),
      (answer) => answer.body.days[0] as Record<string, unknown>
    )
    return { app, receiver, put, settings, receivedIds, today }
  })

describe("destination filters over HTTP ingest and Relay.ingest", () => {
  for (const variant of storeVariants) {
    for (const door of ["HTTP", "Relay.ingest"] as const) {
      it.live.skipIf(variant.skip !== undefined)(
        `${variant.name}, ${door}: each condition alone and combined; filtered messages answer, count, and are not delivered`,
        () =>
          Effect.gen(function*() {
            const { app, put, receivedIds, settings, today } = yield* setup(variant.store)
            const stored = yield* put(settings({ filters }))
            expect(stored.status).toBe(200)
            expect(stored.body.webhooks.filters).toStrictEqual(filters)

            const batch = batchOf("m")
            const [first, second] = [batch.slice(0, 5), batch.slice(5)]
            if (door === "HTTP") {
              expect(yield* postBatch(app.baseUrl, writeKey, first)).toBe(200)
              expect(yield* postBatch(app.baseUrl, writeKey, second)).toBe(200)
            } else {
              const results = [yield* app.relay.ingest("web", first), yield* app.relay.ingest("web", second)]
              expect(results.map((result) => [result.accepted, result.jobs])).toStrictEqual([[5, 1], [5, 5]])
            }

            // No job at all for a filtered message (so nothing a replay could send either).
            for (const messageId of expectedFiltered("m")) {
              expect(yield* app.relayMessages.messageJobs(messageId)).toStrictEqual([])
            }
            const delivered = expectedDelivered("m")
            yield* waitUntil(() => receivedIds().length >= delivered.length, "the unfiltered messages delivered")
            yield* pollUntil(app.relayMessages.backlog, (b) => b.pending + b.delivering === 0, "an empty backlog")
            expect(receivedIds().sort()).toStrictEqual(delivered)

            const usage = yield* pollUntil(today, (day) => day.delivered === delivered.length, "delivered counted")
            expect(usage).toMatchObject({
              apiCalls: door === "HTTP" ? 2 : 0,
              messages: cases.length,
              filtered: cases.length - delivered.length,
              delivered: delivered.length,
              dead: 0
            })
          })
      )
    }
  }

  it.live("a filter change applies to the next message, in this process at once (no cache delay)", () =>
    Effect.gen(function*() {
      const { app, put, receivedIds, settings, today } = yield* setup(() => undefined)
      expect((yield* put(settings({}))).status).toBe(200)
      const debug = (messageId: string) => track(app.baseUrl, writeKey, { userId: "u", event: "Debug", messageId })
      // The source is in the cache from here on.
      expect(yield* debug("before")).toBe(200)
      expect((yield* app.relayMessages.messageJobs("before")).length).toBe(1)

      expect((yield* put(settings({ filters: [{ if: { event: ["Debug"] }, then: "drop" }] }))).status).toBe(200)
      expect(yield* debug("during")).toBe(200)
      expect(yield* app.relay.ingest("web", [{ type: "track", userId: "u", event: "Debug", messageId: "during-lib" }]))
        .toMatchObject({ accepted: 1, jobs: 0 })
      expect(yield* app.relayMessages.messageJobs("during")).toStrictEqual([])
      expect(yield* app.relayMessages.messageJobs("during-lib")).toStrictEqual([])

      expect((yield* put(settings({ filters: [] }))).status).toBe(200)
      expect(yield* debug("after")).toBe(200)
      expect((yield* app.relayMessages.messageJobs("after")).length).toBe(1)

      yield* waitUntil(() => receivedIds().length >= 2, "before and after delivered")
      yield* pollUntil(app.relayMessages.backlog, (b) => b.pending + b.delivering === 0, "an empty backlog")
      expect(receivedIds().sort()).toStrictEqual(["after", "before"])
      expect(yield* today).toMatchObject({ apiCalls: 3, messages: 4, filtered: 2 })
    }))

  it.live("invalid filters are refused with 400 naming the field, and nothing is stored", () =>
    Effect.gen(function*() {
      const { app, put, settings } = yield* setup(() => undefined)
      const good = [{ if: { event: ["Debug"] }, then: "drop" }]
      expect((yield* put(settings({ filters: good }))).status).toBe(200)

      const unknownType = yield* put(settings({
        filters: [{ if: { event: ["X"] }, then: "drop" }, { if: { type: ["click"] }, then: "drop" }]
      }))
      expect(unknownType.status).toBe(400)
      expect(unknownType.body).toMatchObject({
        success: false,
        code: "invalid_settings",
        errors: [{
          path: "webhooks.filters[1].if.type[0]",
          message: "must be one of identify, track, page, screen, group, alias"
        }]
      })

      const several = yield* put(settings({
        filters: [{ if: {}, then: "drop" }, { if: { evnt: ["X"] }, then: "keep" }, { if: { properties: { ".a": 1 } } }]
      }))
      expect(several.status).toBe(400)
      expect(several.body.errors.map((issue: { path: string }) => issue.path).sort()).toStrictEqual([
        "webhooks.filters[0].if",
        "webhooks.filters[1].if.evnt",
        "webhooks.filters[1].then",
        "webhooks.filters[2].if.properties..a",
        "webhooks.filters[2].then"
      ])

      const source = yield* call(app.baseUrl, "GET", "/admin/sources/web")
      expect(source.body.webhooks.filters).toStrictEqual(good)
    }))
})
