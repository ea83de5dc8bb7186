import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { InvalidAdminRequest } from "../../src/audiences/AudienceErrors.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil } from "../support/http.js"
import { createKey } from "./adminKeysSupport.js"
import { postBatch, storeVariants } from "./FiltersUsageSupport.js"

/**
 * The message log's listing (REFERENCE §12), `GET /admin/messages`: every filter through HTTP, repeated filters,
 * paging through `next`, a 400 naming each bad parameter, a key limited to sources; on both stores.
 */

const keys = { web: "wk_log_web_0123456789", app: "wk_log_app_0123456789", bulk: "wk_log_bulk_0123456789" }

type Row = {
  messageId: string
  sourceId: string
  receivedAt: string
  destinations: Array<{ destinationId: string; status: string }>
}

const setup = (store: (typeof storeVariants)[number]["store"]) =>
  Effect.gen(function*() {
    // 400 (permanent: dead at once, the endpoint stays enabled) for "doomed"; 200 for the rest.
    const receiver = yield* startServer((request, response) => {
      const messageId = (JSON.parse(request.body.toString("utf8")) as { messageId: string }).messageId
      if (messageId === "doomed") response.writeHead(400).end("refused")
      else response.writeHead(200).end("ok")
    })
    const app = yield* startApp({ store: store() })
    const put = (id: string, body: unknown) =>
      Effect.gen(function*() {
        const answer = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, { body })
        expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      })
    // web: `webhooks` takes all but the event "Filtered"; `crm` takes no track.
    yield* put("web", {
      writeKey: keys.web,
      destinations: [
        {
          id: "webhooks",
          enabled: true,
          endpoints: [{ url: `${receiver.url}/web` }],
          filters: [{ if: { event: ["Filtered"] }, then: "drop" }]
        },
        {
          id: "crm",
          enabled: true,
          endpoints: [{ url: `${receiver.url}/crm` }],
          filters: [{ if: { type: ["track"] }, then: "drop" }]
        }
      ]
    })
    yield* put("app", { writeKey: keys.app, webhooks: { enabled: true, endpoints: [{ url: `${receiver.url}/app` }] } })
    const send = (writeKey: string, message: Record<string, unknown>) =>
      Effect.gen(function*() {
        expect(yield* postBatch(app.baseUrl, writeKey, [message])).toBe(200)
        // Received times a few milliseconds apart: the order and the time filters are exact.
        yield* Effect.sleep("5 millis")
      })
    yield* send(keys.web, {
      type: "track",
      userId: "alice",
      anonymousId: "anon-1",
      event: "Signed Up",
      messageId: "a1"
    })
    yield* send(keys.web, { type: "page", userId: "alice", name: "Pricing", messageId: "p1" })
    yield* send(keys.web, { type: "track", userId: "alice", event: "Filtered", messageId: "f1" })
    yield* send(keys.web, { type: "track", userId: "bob", anonymousId: "anon-2", event: "Signed Up", messageId: "b1" })
    yield* send(keys.web, { type: "track", userId: "carol", event: "Ordered", messageId: "doomed" })
    yield* send(keys.web, { type: "identify", userId: "bob", traits: { plan: "pro" }, messageId: "i1" })
    yield* send(keys.app, { type: "track", userId: "alice", event: "Opened", messageId: "x1" })
    yield* pollUntil(
      app.relayMessages.backlog,
      (b) => b.delivered + b.dead === 8 && b.pending + b.delivering === 0,
      "the eight jobs end"
    )
    const dead = yield* call(app.baseUrl, "GET", "/admin/dead-letters")
    expect(dead.body.deadLetters.map((job: { messageId: string; lastError: string }) => [job.messageId, job.lastError]))
      .toStrictEqual([["doomed", expect.any(String)]])
    const list = (query: string, authorization?: string) =>
      call(app.baseUrl, "GET", `/admin/messages${query === "" ? "" : `?${query}`}`, {
        ...(authorization !== undefined && { authorization })
      })
    const ids = (query: string) =>
      Effect.map(list(query), (answer) => {
        expect(answer.status, `${query}: ${answer.text}`).toBe(200)
        return (answer.body.messages as ReadonlyArray<Row>).map((message) => message.messageId)
      })
    return { app, list, ids }
  })

/** Every page of a listing through `next`: the messages' ids in order, and how many pages it took. */
const allPages = (list: (query: string) => Effect.Effect<{ status: number; body: any }>, query: string) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    let after: string | null = null
    let pages = 0
    do {
      const answer: { status: number; body: any } = yield* list(
        after === null ? query : `${query}&after=${encodeURIComponent(after)}`
      )
      expect(answer.status).toBe(200)
      pages += 1
      seen.push(...(answer.body.messages as ReadonlyArray<Row>).map((message) => message.messageId))
      after = answer.body.next
      expect(pages).toBeLessThan(100)
    } while (after !== null)
    return { seen, pages }
  })

describe("message log: GET /admin/messages", () => {
  for (const variant of storeVariants) {
    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: newest first, every filter, repeated filters, paging, a limited key`,
      () =>
        Effect.gen(function*() {
          const { app, ids, list } = yield* setup(variant.store)
          const everything = ["x1", "i1", "doomed", "b1", "f1", "p1", "a1"]

          // Filtered messages included; each row with its state at every destination.
          const all = yield* list("")
          expect(all.status).toBe(200)
          expect(all.body.next).toBeNull()
          expect(all.body.messages.map((m: Row) => m.messageId)).toStrictEqual(everything)
          const byId = new Map((all.body.messages as ReadonlyArray<Row>).map((m) => [m.messageId, m]))
          const p1 = byId.get("p1")!
          expect({ ...p1, destinations: [] }).toStrictEqual({
            messageId: "p1",
            sourceId: "web",
            type: "page",
            event: null,
            userId: "alice",
            anonymousId: null,
            receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
            destinations: []
          })
          const jobs = (yield* call(app.baseUrl, "GET", "/admin/messages/p1")).body.jobs as ReadonlyArray<any>
          const sorted = [...p1.destinations].sort((a, b) => a.destinationId.localeCompare(b.destinationId))
          expect(sorted).toStrictEqual(["crm", "webhooks"].map((destinationId) => {
            const job = jobs.find((j) => j.destinationId === destinationId)
            return {
              destinationId,
              jobId: job.id,
              status: "delivered",
              attempts: 1,
              lastAttempt: { statusCode: 200, at: job.attempts[0].startedAt }
            }
          }))
          expect(byId.get("a1")).toMatchObject({ type: "track", event: "Signed Up", anonymousId: "anon-1" })
          expect(byId.get("f1")!.destinations).toStrictEqual([])
          expect(byId.get("doomed")!.destinations).toMatchObject([{
            destinationId: "webhooks",
            status: "dead",
            attempts: 1,
            lastAttempt: { statusCode: 400 }
          }])
          expect(byId.get("x1")).toMatchObject({ sourceId: "app" })

          // Each filter, then repeated (any of its values), then together (all of them).
          expect(yield* ids("sourceId=web")).toStrictEqual(everything.filter((id) => id !== "x1"))
          expect(yield* ids("sourceId=app")).toStrictEqual(["x1"])
          expect(yield* ids("sourceId=app&sourceId=web")).toStrictEqual(everything)
          expect(yield* ids("sourceId=nowhere")).toStrictEqual([])
          expect(yield* ids("destinationId=crm")).toStrictEqual(["i1", "p1"])
          expect(yield* ids("destinationId=crm&destinationId=webhooks")).toStrictEqual(
            everything.filter((id) => id !== "f1")
          )
          expect(yield* ids("status=dead")).toStrictEqual(["doomed"])
          expect(yield* ids("status=filtered")).toStrictEqual(["f1"])
          expect(yield* ids("status=pending&status=delivering")).toStrictEqual([])
          expect(yield* ids("status=dead&status=filtered")).toStrictEqual(["doomed", "f1"])
          expect(yield* ids("status=delivered")).toStrictEqual(["x1", "i1", "b1", "p1", "a1"])
          expect(yield* ids("type=page")).toStrictEqual(["p1"])
          expect(yield* ids("type=identify&type=page")).toStrictEqual(["i1", "p1"])
          expect(yield* ids("event=Signed%20Up")).toStrictEqual(["b1", "a1"])
          expect(yield* ids("event=Opened&event=Ordered")).toStrictEqual(["x1", "doomed"])
          expect(yield* ids("userId=alice")).toStrictEqual(["x1", "f1", "p1", "a1"])
          expect(yield* ids("userId=bob&userId=carol")).toStrictEqual(["i1", "doomed", "b1"])
          expect(yield* ids("anonymousId=anon-1")).toStrictEqual(["a1"])
          expect(yield* ids("anonymousId=anon-1&anonymousId=anon-2")).toStrictEqual(["b1", "a1"])
          const at = (id: string) => byId.get(id)!.receivedAt
          expect(yield* ids(`since=${at("b1")}`)).toStrictEqual(["x1", "i1", "doomed", "b1"])
          expect(yield* ids(`until=${at("b1")}`)).toStrictEqual(["f1", "p1", "a1"])
          expect(yield* ids(`since=${at("p1")}&until=${at("i1")}`)).toStrictEqual(["doomed", "b1", "f1", "p1"])
          expect(yield* ids("sourceId=web&userId=alice&type=track")).toStrictEqual(["f1", "a1"])
          expect(yield* ids("userId=alice&status=delivered&destinationId=webhooks")).toStrictEqual(["x1", "p1", "a1"])
          expect(yield* ids("sourceId=web&userId=alice&status=delivered&destinationId=webhooks")).toStrictEqual([
            "p1",
            "a1"
          ])

          // Pages through `next`: every message once, in order, whatever the page size; the filters stay.
          const first = yield* list("limit=2")
          expect(first.body.messages.map((m: Row) => m.messageId)).toStrictEqual(["x1", "i1"])
          expect(first.body.next).toStrictEqual(expect.any(String))
          for (const limit of [1, 2, 3, 7]) {
            const { seen } = yield* allPages(list, `limit=${limit}`)
            expect(seen, `limit ${limit}`).toStrictEqual(everything)
          }
          expect((yield* allPages(list, "userId=alice&limit=1")).seen).toStrictEqual(["x1", "f1", "p1", "a1"])
          expect((yield* allPages(list, "status=delivered&sourceId=web&limit=2")).seen).toStrictEqual([
            "i1",
            "b1",
            "p1",
            "a1"
          ])

          // A key limited to web sees web's messages only; naming app is 404, as if it did not exist.
          const limited = yield* createKey(app, { name: "web team", scopes: ["messages:read"], sourceIds: ["web"] })
          const own = yield* list("", limited.authorization)
          expect(own.status).toBe(200)
          expect(own.body.messages.map((m: Row) => m.messageId)).toStrictEqual(everything.filter((id) => id !== "x1"))
          expect((yield* list("userId=alice", limited.authorization)).body.messages.map((m: Row) => m.messageId))
            .toStrictEqual(["f1", "p1", "a1"])
          for (const query of ["sourceId=app", "sourceId=web&sourceId=app"]) {
            const hidden = yield* list(query, limited.authorization)
            expect(hidden.status, query).toBe(404)
            expect(hidden.body.code).toBe("not_found")
          }
          const reader = yield* createKey(app, { name: "reader", scopes: ["sources:read"] })
          const refused = yield* list("", reader.authorization)
          expect(refused.status).toBe(403)
          expect(refused.body.message).toContain("needs scope messages:read")

          // The library door answers the same page.
          const viaRelay = yield* app.relayMessages.listMessages({ userIds: ["alice"], limit: 50 })
          expect(viaRelay.messages.map((m) => m.messageId)).toStrictEqual(["x1", "f1", "p1", "a1"])
          expect(viaRelay.next).toBeNull()
          expect(typeof viaRelay.messages[0]!.receivedAt).toBe("number")
        }),
      60_000
    )
  }

  for (const variant of storeVariants) {
    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: the default page is 50 messages; a bulk of them pages through \`next\``,
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          const put = yield* call(app.baseUrl, "PUT", "/admin/sources/bulk", {
            body: {
              writeKey: keys.bulk,
              webhooks: { enabled: true, endpoints: [{ url: "https://bulk.example.com/in" }] }
            }
          })
          expect(put.status).toBe(200)
          const batch = Array.from({ length: 120 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "E" }))
          expect(yield* postBatch(app.baseUrl, keys.bulk, batch)).toBe(200)
          const first = yield* call(app.baseUrl, "GET", "/admin/messages")
          expect(first.body.messages).toHaveLength(50)
          expect(first.body.next).not.toBeNull()
          const pages = yield* allPages((query) => call(app.baseUrl, "GET", `/admin/messages?${query}`), "limit=1000")
          expect(pages.seen).toHaveLength(120)
          expect(new Set(pages.seen).size).toBe(120)
          const fifty = yield* allPages((query) => call(app.baseUrl, "GET", `/admin/messages?${query}`), "limit=50")
          expect(fifty.seen).toStrictEqual(pages.seen)
        })
    )

    it.live.skipIf(variant.skip !== undefined)(
      `${variant.name}: a 400 names each parameter it cannot take`,
      () =>
        Effect.gen(function*() {
          const app = yield* startApp({ dispatch: false, store: variant.store() })
          const refused = (query: string, ...paths: ReadonlyArray<string>) =>
            Effect.gen(function*() {
              const answer = yield* call(app.baseUrl, "GET", `/admin/messages?${query}`)
              expect(answer.status, query).toBe(400)
              expect(answer.body, query).toMatchObject({ success: false, code: "invalid_request" })
              expect(answer.body.errors.map((issue: { path: string }) => issue.path).sort(), query).toStrictEqual(
                [...paths].sort()
              )
              return answer.body
            })
          const status = yield* refused("status=nope", "status")
          expect(status.errors[0].message).toBe("nope: must be one of pending, delivering, delivered, dead, filtered")
          yield* refused("status=dead&status=lost", "status")
          for (const since of ["yesterday", "2026-13-45T00:00:00Z", "1700000000000", "2026-01-01T25:00"]) {
            yield* refused(`since=${since}`, "since")
          }
          yield* refused("until=soon", "until")
          yield* refused("since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "until")
          for (const limit of ["0", "1001", "x", "2.5", "-3"]) {
            const body = yield* refused(`limit=${limit}`, "limit")
            expect(body.errors[0].message).toBe("must be a whole number from 1 to 1000")
          }
          yield* refused("limit=5&limit=6", "limit")
          yield* refused("since=2026-01-01T00:00:00Z&since=2026-01-02T00:00:00Z", "since")
          yield* refused("userId=", "userId")
          const misspelt = yield* refused("user=alice&statuses=dead", "statuses", "user")
          expect(misspelt.errors[0].message).toBe("is not a parameter of this listing")
          yield* refused("after=not-a-cursor", "after")
          // Every refused parameter at once.
          yield* refused("status=x&since=y&limit=0&sourceId=", "limit", "since", "sourceId", "status")

          for (const ok of ["limit=1", "limit=1000", "since=2026-01-01", "until=2026-01-01T10:00:00%2B02:00"]) {
            const answer = yield* call(app.baseUrl, "GET", `/admin/messages?${ok}`)
            expect(answer.body, ok).toStrictEqual({ messages: [], next: null })
          }
          // An altered cursor is not one either.
          const put = yield* call(app.baseUrl, "PUT", "/admin/sources/bulk", {
            body: {
              writeKey: keys.bulk,
              webhooks: { enabled: true, endpoints: [{ url: "https://bulk.example.com/in" }] }
            }
          })
          expect(put.status).toBe(200)
          yield* app.relay.ingest("bulk", [{ type: "track", userId: "u1", event: "E" }, {
            type: "track",
            userId: "u2",
            event: "E"
          }])
          const page = yield* call(app.baseUrl, "GET", "/admin/messages?limit=1")
          const next = page.body.next as string
          expect(next).toStrictEqual(expect.any(String))
          const altered = `${next.slice(0, -2)}${next.endsWith("A") ? "B" : "A"}${next.slice(-1)}`
          yield* refused(`limit=1&after=${encodeURIComponent(altered)}`, "after")

          expect((yield* call(app.baseUrl, "GET", "/admin/messages", { authorization: null })).status).toBe(401)
          const library = yield* Effect.flip(app.relayMessages.listMessages({ limit: 0 }))
          expect(library).toBeInstanceOf(InvalidAdminRequest)
          expect((library as InvalidAdminRequest).errors).toStrictEqual([{
            path: "limit",
            message: "must be a whole number from 1 to 1000"
          }])
          const cursor = yield* Effect.flip(app.relayMessages.listMessages({ limit: 5, after: "nope" }))
          expect((cursor as InvalidAdminRequest).errors.map((issue) => issue.path)).toStrictEqual(["after"])
        })
    )
  }
})
