import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidAdminRequest } from "../../src/audiences/AudienceErrors.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { postBatch, storeVariants } from "./FiltersUsageSupport.js"

/**
 * The console's message log (REFERENCE §12): `GET /admin/messages?userId=&sourceId=&limit=` and
 * `GET /admin/sources/{id}/messages?limit=`, each message with its jobs and their attempts.
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

          const search = (query: string) => call(app.baseUrl, "GET", `/admin/messages?${query}`)
          const ids = (answer: { body: { messages: ReadonlyArray<{ messageId: string }> } }) =>
            answer.body.messages.map((message) => message.messageId)

          const alice = yield* search("userId=alice")
          expect(alice.status).toBe(200)
          // Newest first; the filtered message made no job and is not listed.
          expect(ids(alice)).toStrictEqual(["a4", "doomed", "a2", "a1"])

          // Each message: its fields, and its jobs exactly as GET /admin/messages/:id shows them.
          const [a4, doomed, a2, a1] = alice.body.messages
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
          expect(a4).toMatchObject({ sourceId: "app", type: "track", event: "Opened" })
          expect(doomed.jobs).toStrictEqual((yield* call(app.baseUrl, "GET", "/admin/messages/doomed")).body.jobs)
          expect(doomed.jobs[0]).toMatchObject({ status: "dead", attemptCount: 1 })
          expect(doomed.jobs[0].attempts[0]).toMatchObject({
            statusCode: 410,
            outcome: "permanent",
            responseSnippet: "gone"
          })
          expect(Date.parse(a4.receivedAt)).toBeGreaterThanOrEqual(Date.parse(a1.receivedAt))

          expect(ids(yield* search("userId=alice&sourceId=web"))).toStrictEqual(["doomed", "a2", "a1"])
          expect(ids(yield* search("userId=alice&sourceId=app"))).toStrictEqual(["a4"])
          expect(ids(yield* search("userId=alice&limit=2"))).toStrictEqual(["a4", "doomed"])
          expect(ids(yield* search("userId=bob"))).toStrictEqual(["b1"])
          expect(ids(yield* search("userId=carol"))).toStrictEqual([])
          // A source alone: its recent messages, every user.
          expect(ids(yield* search("sourceId=web"))).toStrictEqual(["doomed", "b1", "a2", "a1"])
          const bySource = yield* call(app.baseUrl, "GET", "/admin/sources/web/messages?limit=2")
          expect(bySource.status).toBe(200)
          expect(ids(bySource)).toStrictEqual(["doomed", "b1"])
          expect(bySource.body.messages[0]).toStrictEqual(doomed)
          expect(ids(yield* call(app.baseUrl, "GET", "/admin/sources/app/messages"))).toStrictEqual(["a4"])

          // The library door answers the same records.
          const viaRelay = yield* app.relayMessages.searchMessages({ userId: "alice", limit: 50 })
          expect(viaRelay.map((message) => message.messageId)).toStrictEqual(["a4", "doomed", "a2", "a1"])
          expect(viaRelay[3]!.jobs[0]!.attempts[0]!.statusCode).toBe(200)
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
      const answer = yield* call(app.baseUrl, "GET", "/admin/messages?userId=dora")
      expect(answer.body.messages).toHaveLength(1)
      const jobs = answer.body.messages[0].jobs as ReadonlyArray<{ sourceId: string; destinationId: string }>
      expect(jobs.map((job) => [job.sourceId, job.destinationId]).sort()).toStrictEqual([
        ["multi", "crm"],
        ["multi", "webhooks"]
      ])
      const byId = (yield* call(app.baseUrl, "GET", "/admin/messages/d1")).body.jobs as typeof jobs
      expect(byId.map((job) => job.destinationId).sort()).toStrictEqual(["crm", "webhooks"])
    }))

  it.live("validation: userId or sourceId required, limit 1..500, 404 for an unknown source's list", () =>
    Effect.gen(function*() {
      const { app } = yield* setup(() => undefined)
      const refused = (query: string, path: string, message: string) =>
        Effect.gen(function*() {
          const answer = yield* call(app.baseUrl, "GET", `/admin/messages${query}`)
          expect(answer.status, query).toBe(400)
          expect(answer.body, query).toMatchObject({ success: false, code: "invalid_request" })
          expect(answer.body.errors, query).toContainEqual({ path, message })
        })
      yield* refused("", "userId", "is required unless sourceId is given")
      yield* refused("?limit=5", "userId", "is required unless sourceId is given")
      yield* refused("?userId=", "userId", "must not be empty")
      for (const limit of ["0", "501", "x", "2.5", "-3"]) {
        yield* refused(`?userId=alice&limit=${limit}`, "limit", "must be a whole number from 1 to 500")
      }
      for (const ok of ["?userId=alice&limit=1", "?userId=alice&limit=500", "?sourceId=web"]) {
        expect((yield* call(app.baseUrl, "GET", `/admin/messages${ok}`)).body, ok).toStrictEqual({ messages: [] })
      }
      const sourceLimit = yield* call(app.baseUrl, "GET", "/admin/sources/web/messages?limit=0")
      expect(sourceLimit.status).toBe(400)
      expect(sourceLimit.body.errors).toStrictEqual([{
        path: "limit",
        message: "must be a whole number from 1 to 500"
      }])
      const unknown = yield* call(app.baseUrl, "GET", "/admin/sources/nope/messages")
      expect(unknown.status).toBe(404)
      expect((yield* call(app.baseUrl, "GET", "/admin/messages?userId=alice", { authorization: null })).status).toBe(
        401
      )
      // The single-message route is unchanged.
      expect((yield* call(app.baseUrl, "GET", "/admin/messages/none")).status).toBe(404)
      expect(yield* Effect.flip(app.relayMessages.searchMessages({ limit: 10 }))).toBeInstanceOf(InvalidAdminRequest)
    }))
})
