import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidAdminRequest } from "../../src/audiences/AudienceErrors.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { postBatch, storeVariants } from "./FiltersUsageSupport.js"

/**
 * A source's messages with their jobs and attempts (REFERENCE §12): `GET /admin/sources/{id}/messages?limit=` and the
 * library's `searchMessages`, beside the log's listing (`GET /admin/messages`, test/ingest/MessageLog.test.ts), which
 * shows the same messages with their state at each destination.
 */

const keys = { web: "wk_search_web_0123", app: "wk_search_app_0123" }

const setup = (store: (typeof storeVariants)[number]["store"]) =>
  Effect.gen(function*() {
    // 410 (permanent, one attempt) for "doomed"; 200 with a body for the rest.
    const receiver = yield* startServer((request, response) => {
      const messageId = (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId
      if (messageId === "doomed") response.writeHead(410).end("gone")
      else response.writeHead(200).end("ok")
    })
    const app = yield* startApp({ store: store() })
    for (const [id, writeKey] of Object.entries(keys)) {
      const put = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, {
        body: {
          writeKey,
          webhooks: {
            enabled: true,
            endpoints: [{ url: `${receiver.url}/${id}` }],
            filters: [{ if: { event: ["Filtered"] }, then: "drop" }]
          }
        }
      })
      expect(put.status).toBe(200)
    }
    return { app, receiver }
  })

describe("message search", () => {
  for (const variant of storeVariants) {
    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: by user (optionally of one source) and by source, newest first, with jobs and attempts`,
      () =>
        Effect.gen(function*() {
          const { app, receiver } = yield* setup(variant.store)
          // alice: four messages through web (one dead, one filtered), one through app; bob: one.
          expect(yield* track(app.baseUrl, keys.web, { userId: "alice", event: "Signed Up", messageId: "a1" })).toBe(
            200
          )
          expect(
            yield* postBatch(app.baseUrl, keys.web, [
              { type: "page", userId: "alice", name: "Pricing", messageId: "a2" },
              { type: "track", userId: "alice", event: "Filtered", messageId: "a-filtered" },
              { type: "track", userId: "bob", event: "Signed Up", messageId: "b1" }
            ])
          ).toBe(200)
          expect(yield* track(app.baseUrl, keys.web, { userId: "alice", event: "Ordered", messageId: "doomed" })).toBe(
            200
          )
          expect(yield* track(app.baseUrl, keys.app, { userId: "alice", event: "Opened", messageId: "a4" })).toBe(200)
          yield* pollUntil(
            app.relayMessages.backlog,
            (b) => b.delivered === 4 && b.dead === 1 && b.pending + b.delivering === 0,
            "four delivered and one dead"
          )
          expect(receiver.requests.length).toBe(5)

          const bySource = (path: string) => call(app.baseUrl, "GET", path)
          const listing = (query: string) => call(app.baseUrl, "GET", `/admin/messages?${query}`)
          const ids = (answer: { body: { messages: ReadonlyArray<{ messageId: string }> } }) =>
            answer.body.messages.map((message) => message.messageId)

          const web = yield* bySource("/admin/sources/web/messages")
          expect(web.status).toBe(200)
          // Newest first; the filtered message made no job and is not listed here (the log lists it).
          expect(ids(web)).toStrictEqual(["doomed", "b1", "a2", "a1"])

          // Each message: its fields, and its jobs exactly as GET /admin/messages/:id shows them.
          const [doomed, , a2, a1] = web.body.messages
          expect(a1).toStrictEqual({
            messageId: "a1",
            sourceId: "web",
            userId: "alice",
            type: "track",
            event: "Signed Up",
            receivedAt: a1.jobs[0].createdAt,
            jobs: (yield* call(app.baseUrl, "GET", "/admin/messages/a1")).body.jobs
          })
          expect(a1.jobs).toHaveLength(1)
          expect(a1.jobs[0]).toMatchObject({
            status: "delivered",
            attemptCount: 1,
            kind: "message",
            destinationId: "webhooks"
          })
          expect(a1.jobs[0].attempts).toStrictEqual([{
            url: `${receiver.url ?? ""}/web`,
            attempt: 1,
            startedAt: expect.any(String),
            durationMs: expect.any(Number),
            statusCode: 200,
            error: null,
            outcome: "success",
            responseSnippet: "ok"
          }])
          expect(a2).toMatchObject({ sourceId: "web", type: "page", event: null })
          expect(doomed.jobs).toStrictEqual((yield* call(app.baseUrl, "GET", "/admin/messages/doomed")).body.jobs)
          expect(doomed.jobs[0]).toMatchObject({ status: "dead", attemptCount: 1 })
          expect(doomed.jobs[0].attempts[0]).toMatchObject({
            statusCode: 410,
            outcome: "permanent",
            responseSnippet: "gone"
          })
          const app4 = (yield* bySource("/admin/sources/app/messages")).body.messages
          expect(app4.map((message: { messageId: string }) => message.messageId)).toStrictEqual(["a4"])
          expect(app4[0]).toMatchObject({ sourceId: "app", type: "track", event: "Opened" })
          expect(Date.parse(app4[0].receivedAt)).toBeGreaterThanOrEqual(Date.parse(a1.receivedAt))
          const limited = yield* bySource("/admin/sources/web/messages?limit=2")
          expect(ids(limited)).toStrictEqual(["doomed", "b1"])
          expect(limited.body.messages[0]).toStrictEqual(doomed)

          // The log's listing: the same messages (the filtered one too), each job as its state at its destination.
          const alice = yield* listing("userId=alice")
          expect(ids(alice)).toStrictEqual(["a4", "doomed", "a-filtered", "a2", "a1"])
          expect(ids(yield* listing("userId=alice&sourceId=web"))).toStrictEqual(["doomed", "a-filtered", "a2", "a1"])
          expect(ids(yield* listing("userId=alice&sourceId=app"))).toStrictEqual(["a4"])
          expect(ids(yield* listing("userId=bob"))).toStrictEqual(["b1"])
          expect(ids(yield* listing("userId=carol"))).toStrictEqual([])
          for (const row of alice.body.messages.filter((m: { messageId: string }) => m.messageId !== "a-filtered")) {
            const jobs = (yield* call(app.baseUrl, "GET", `/admin/messages/${row.messageId}`)).body.jobs
            expect(row.destinations).toStrictEqual(jobs.map((job: any) => ({
              destinationId: job.destinationId,
              jobId: job.id,
              status: job.status,
              attempts: job.attemptCount,
              lastAttempt: { statusCode: job.attempts.at(-1).statusCode, at: job.attempts.at(-1).startedAt }
            })))
          }
          expect(alice.body.messages[2]).toMatchObject({ messageId: "a-filtered", destinations: [] })

          // The library door answers the same records.
          const viaRelay = yield* app.relayMessages.searchMessages({ userId: "alice", limit: 50 })
          expect(viaRelay.map((message) => message.messageId)).toStrictEqual(["a4", "doomed", "a2", "a1"])
          expect(viaRelay[3]!.jobs[0]!.attempts[0]!.statusCode).toBe(200)
          expect((yield* app.relayMessages.searchMessages({ userId: "alice", sourceId: "web", limit: 2 })).map((m) =>
            m.messageId
          )).toStrictEqual(["doomed", "a2"])
        })
    )
  }

  it.live("a message with several destinations lists one job per destination, each naming it", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const destination = (id: string) => ({ id, enabled: true, endpoints: [{ url: `https://${id}.example.com` }] })
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/multi", {
        body: { writeKey: "wk_search_multi_0123", destinations: [destination("webhooks"), destination("crm")] }
      })
      expect(put.status).toBe(200)
      yield* app.relay.ingest("multi", [{ type: "track", userId: "dora", event: "Went", messageId: "d1" }])
      const answer = yield* call(app.baseUrl, "GET", "/admin/sources/multi/messages")
      expect(answer.body.messages).toHaveLength(1)
      const jobs = answer.body.messages[0].jobs as ReadonlyArray<{ sourceId: string; destinationId: string }>
      expect(jobs.map((job) => [job.sourceId, job.destinationId]).sort()).toStrictEqual([
        ["multi", "crm"],
        ["multi", "webhooks"]
      ])
      const byId = (yield* call(app.baseUrl, "GET", "/admin/messages/d1")).body.jobs as typeof jobs
      expect(byId.map((job) => job.destinationId).sort()).toStrictEqual(["crm", "webhooks"])
      const logged = (yield* call(app.baseUrl, "GET", "/admin/messages?userId=dora")).body.messages
      expect(logged).toHaveLength(1)
      expect(logged[0].destinations.map((d: { destinationId: string }) => d.destinationId).sort()).toStrictEqual([
        "crm",
        "webhooks"
      ])
    }))

  it.live("validation: limit 1..500, 404 for an unknown source's list", () =>
    Effect.gen(function*() {
      const { app } = yield* setup(() => undefined)
      for (const limit of ["0", "501", "x", "2.5", "-3"]) {
        const answer = yield* call(app.baseUrl, "GET", `/admin/sources/web/messages?limit=${limit}`)
        expect(answer.status, limit).toBe(400)
        expect(answer.body, limit).toMatchObject({ success: false, code: "invalid_request" })
        expect(answer.body.errors, limit).toStrictEqual([{
          path: "limit",
          message: "must be a whole number from 1 to 500"
        }])
      }
      for (const ok of ["?limit=1", "?limit=500", ""]) {
        const answer = yield* call(app.baseUrl, "GET", `/admin/sources/web/messages${ok}`)
        expect(answer.body, ok).toStrictEqual({ messages: [] })
      }
      const unknown = yield* call(app.baseUrl, "GET", "/admin/sources/nope/messages")
      expect(unknown.status).toBe(404)
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/web/messages", { authorization: null })).status).toBe(401)
      // The single-message route is unchanged.
      expect((yield* call(app.baseUrl, "GET", "/admin/messages/none")).status).toBe(404)
      expect(yield* Effect.flip(app.relayMessages.searchMessages({ limit: 10 }))).toBeInstanceOf(InvalidAdminRequest)
      expect(yield* Effect.flip(app.relayMessages.searchMessages({ userId: "", limit: 10 }))).toMatchObject({
        errors: [{ path: "userId", message: "must not be empty" }]
      })
    }))
})
