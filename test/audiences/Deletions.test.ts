import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { formatTimestamp } from "../../src/domain/Timestamp.js"
import * as StoreLayers from "../../src/store/Store.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { admin, isoWithMillis, parsed, pollUntil, signatureOf, track } from "./support.js"

/** Deletion requests (REFERENCE §5, §3 "delete") over real HTTP, delivered by the real dispatcher to loopback receivers. */

const secret = "whsec_deletions_test"

/**
 * Three sources, each with its own receiver (answering 200): `web` (enabled, signed), `app`
 * (enabled, no secret) and `off` (destination disabled).
 */
const startReceivers = Effect.gen(function*() {
  return {
    web: yield* startServer((_request, response) => response.writeHead(200).end("ok")),
    app: yield* startServer((_request, response) => response.writeHead(200).end("ok")),
    off: yield* startServer((_request, response) => response.writeHead(200).end("ok"))
  }
})

type Receivers = Effect.Success<typeof startReceivers>

const setup = (
  options: { readonly dispatch?: boolean; readonly directory?: string; readonly receivers?: Receivers } = {}
) =>
  Effect.gen(function*() {
    const receivers = options.receivers ?? (yield* startReceivers)
    const app = yield* startApp({
      dispatch: options.dispatch ?? true,
      ...(options.directory !== undefined && { store: StoreLayers.layerSqlite({ directory: options.directory }) })
    })
    yield* app.relaySources.putSource({
      id: "web",
      writeKey: "wk_web",
      webhooks: { enabled: true, sharedSecret: secret, endpoints: [{ url: `${receivers.web.url}/hook` }] }
    })
    yield* app.relaySources.putSource({
      id: "app",
      writeKey: "wk_app",
      webhooks: { enabled: true, endpoints: [{ url: `${receivers.app.url}/hook?via=app` }] }
    })
    yield* app.relaySources.putSource({
      id: "off",
      writeKey: "wk_off",
      webhooks: { enabled: false, endpoints: [{ url: `${receivers.off.url}/hook` }] }
    })
    return { app, receivers }
  })

describe("deletion requests: the delete notification (REFERENCE §3, §5)", () => {
  it.live("is delivered byte-exact to every source whose destination is enabled, signed when a secret is set", () =>
    Effect.gen(function*() {
      const { app, receivers } = yield* setup()
      // A user with no data at all is still notified.
      const created = yield* admin(app.baseUrl, "POST", "/admin/deletions", { body: { userId: "user-42" } })
      expect(created.status).toBe(202)
      expect(Object.keys(created.body)).toStrictEqual(["id"])
      const id: string = created.body.id

      yield* waitUntil(() => receivers.web.requests.length === 1 && receivers.app.requests.length === 1, "notified")
      const shown = yield* admin(app.baseUrl, "GET", `/admin/deletions/${id}`)
      expect(shown.status).toBe(200)
      expect(shown.body.createdAt).toMatch(isoWithMillis)
      const expected = `{"type":"delete","userId":"user-42","timestamp":"${shown.body.createdAt}"}`

      const web = receivers.web.requests[0]!
      expect(web.method).toBe("POST")
      expect(web.body.toString("utf8")).toBe(expected)
      expect(web.headers["x-signature"]).toBe(signatureOf(secret, web.body))
      expect(web.headers["content-type"]).toBe("application/json")
      expect(web.headers["user-agent"]).toBe("hookrelay/1.0")

      const other = receivers.app.requests[0]!
      expect(other.url).toBe("/hook?via=app")
      expect(other.body.toString("utf8")).toBe(expected)
      expect(other.headers["x-signature"]).toBeUndefined()

      // The disabled destination gets nothing, now or later.
      yield* Effect.sleep("300 millis")
      expect(receivers.off.requests).toHaveLength(0)
      expect(receivers.web.requests).toHaveLength(1)
      expect(receivers.app.requests).toHaveLength(1)

      // Once delivered, the request shows each notification delivered.
      const done = (yield* pollUntil(
        admin(app.baseUrl, "GET", `/admin/deletions/${id}`),
        (answer) => answer.body.notifications.every((n: any) => n.status === "delivered"),
        "the notifications are marked delivered"
      )).body
      expect(done).toMatchObject({
        id,
        userId: "user-42",
        sourceIds: ["app", "off", "web"],
        createdAt: shown.body.createdAt,
        jobsRemoved: 0
      })
      expect(done.notifications.map((n: any) => [n.sourceId, n.status, n.attempts])).toStrictEqual([
        ["app", "delivered", 1],
        ["web", "delivered", 1]
      ])
      for (const n of done.notifications) {
        expect(n.jobId).toMatch(/^[0-9a-f]+$/)
        expect(n.finishedAt).toMatch(isoWithMillis)
      }
      // The notifications are jobs like any other: the message look-up finds them under the request id.
      const jobs = yield* admin(app.baseUrl, "GET", `/admin/messages/${id}`)
      expect(jobs.body.jobs.map((job: any) => [job.sourceId, job.status]).sort()).toStrictEqual([
        ["app", "delivered"],
        ["web", "delivered"]
      ])
    }))

  it.live("with sourceIds, only those sources are covered; duplicates collapse", () =>
    Effect.gen(function*() {
      const { app, receivers } = yield* setup()
      const created = yield* admin(app.baseUrl, "POST", "/admin/deletions", {
        body: { userId: "u1", sourceIds: ["web", "off", "web"] }
      })
      expect(created.status).toBe(202)
      yield* waitUntil(() => receivers.web.requests.length === 1, "web notified")
      yield* Effect.sleep("300 millis")
      expect(receivers.app.requests).toHaveLength(0)
      expect(receivers.off.requests).toHaveLength(0)
      const shown = yield* admin(app.baseUrl, "GET", `/admin/deletions/${created.body.id}`)
      expect(shown.body.sourceIds).toStrictEqual(["web", "off"])
      expect(shown.body.notifications.map((n: any) => n.sourceId)).toStrictEqual(["web"])
    }))
})

describe("deletion requests: the user's undelivered jobs (REFERENCE §5)", () => {
  it.live("pending and dead jobs of the user are removed and never delivered; others' jobs are untouched", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      // The same receivers in both phases: the jobs queued in phase 1 are delivered to them in phase 2.
      const shared = yield* startReceivers
      // Phase 1, nothing delivering: the user's messages wait in the outbox, one of them dead.
      const { deletionId, keptMessages } = yield* Effect.scoped(Effect.gen(function*() {
        const { app, receivers } = yield* setup({ dispatch: false, directory, receivers: shared })
        // `off` was enabled when the user's message came in, and is disabled since: its job waits.
        const offSettings = { endpoints: [{ url: `${receivers.off.url}/hook` }] }
        yield* app.relaySources.putSource({
          id: "off",
          writeKey: "wk_off",
          webhooks: { enabled: true, ...offSettings }
        })
        for (
          const [writeKey, userId, event] of [
            ["wk_web", "doomed", "W1"],
            ["wk_web", "doomed", "W2"],
            ["wk_app", "doomed", "A1"],
            ["wk_off", "doomed", "O1"],
            ["wk_web", "keeper", "K1"],
            ["wk_app", "keeper", "K2"]
          ] as const
        ) {
          expect(yield* track(app.baseUrl, writeKey, { userId, event, messageId: `${userId}-${event}` })).toBe(200)
        }
        yield* app.relaySources.putSource({
          id: "off",
          writeKey: "wk_off",
          webhooks: { enabled: false, ...offSettings }
        })
        // Make doomed-W2 a dead letter, with an attempt recorded.
        const claimed = yield* app.outbox.claimDue("test", Date.now() + 1_000, 100, 60_000)
        const w2 = claimed.find((job) => job.messageId === "doomed-W2")!
        yield* app.outbox.completeMany("test", [{ _tag: "Dead", jobId: w2.id, at: Date.now(), lastError: "410" }], [
          {
            jobId: w2.id,
            url: "https://x.example",
            attempt: 1,
            startedAt: Date.now(),
            durationMs: 1,
            outcome: "permanent"
          }
        ])
        yield* app.outbox.releaseLeases("test")
        expect((yield* app.deadLetters.listDeadLetters({ limit: 10 })).map((job) => job.messageId)).toStrictEqual([
          "doomed-W2"
        ])

        const created = yield* admin(app.baseUrl, "POST", "/admin/deletions", {
          body: { userId: "doomed", sourceIds: ["web", "off"] }
        })
        expect(created.status).toBe(202)
        for (const gone of ["doomed-W1", "doomed-W2", "doomed-O1"]) {
          expect(yield* app.messageLog.jobsForMessage(gone), gone).toStrictEqual([])
        }
        // Another source's jobs of the user, and other users' jobs, stay.
        for (const kept of ["doomed-A1", "keeper-K1", "keeper-K2"]) {
          expect((yield* app.messageLog.jobsForMessage(kept)).map((job) => job.status), kept).toStrictEqual(["pending"])
        }
        expect(yield* app.deadLetters.listDeadLetters({ limit: 10 })).toStrictEqual([])
        const shown = yield* admin(app.baseUrl, "GET", `/admin/deletions/${created.body.id}`)
        // W1 (pending), W2 (dead) and O1 (pending for the disabled destination).
        expect(shown.body).toMatchObject({ userId: "doomed", sourceIds: ["web", "off"], jobsRemoved: 3 })
        expect(shown.body.notifications.map((n: any) => [n.sourceId, n.status])).toStrictEqual([["web", "pending"]])
        return { deletionId: created.body.id as string, keptMessages: ["doomed-A1", "keeper-K1", "keeper-K2"] }
      }))

      // Phase 2, the same database with a dispatcher: everything left is delivered, the removed jobs never.
      const { app, receivers } = yield* setup({ directory, receivers: shared })
      yield* waitUntil(
        () => receivers.web.requests.length === 2 && receivers.app.requests.length === 2,
        "the remaining jobs are delivered"
      )
      yield* Effect.sleep("300 millis")
      const received = [...receivers.web.requests, ...receivers.app.requests, ...receivers.off.requests].map(parsed)
      expect(received.filter((body) => body.type === "track").map((body) => body.messageId).sort()).toStrictEqual(
        keptMessages
      )
      expect(received.filter((body) => body.type === "delete")).toStrictEqual([
        { type: "delete", userId: "doomed", timestamp: expect.stringMatching(isoWithMillis) }
      ])
      expect(receivers.off.requests).toHaveLength(0)
      const deletion = yield* app.relayAudiences.getDeletion(deletionId)
      expect(deletion.notifications).toHaveLength(1)
      expect(formatTimestamp(deletion.createdAt)).toBe(received.find((body) => body.type === "delete")!.timestamp)
    }))

  it.live("deleteUser through the library: the same request, and jobs being delivered are left alone", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      yield* track(app.baseUrl, "wk_web", { userId: "u9", event: "InFlight", messageId: "u9-in-flight" })
      yield* track(app.baseUrl, "wk_web", { userId: "u9", event: "Waiting", messageId: "u9-waiting" })
      const claimed = yield* app.outbox.claimDue("test", Date.now() + 1_000, 100, 60_000)
      yield* app.outbox.releaseLeases(
        "test",
        claimed.filter((job) => job.messageId !== "u9-in-flight").map((j) => j.id)
      )

      const request = yield* app.relayAudiences.deleteUser("u9")
      expect(request).toMatchObject({ userId: "u9", sourceIds: ["app", "off", "web"], jobsRemoved: 1 })
      expect(request.notifications.map((n) => n.sourceId)).toStrictEqual(["app", "web"])
      expect((yield* app.messageLog.jobsForMessage("u9-in-flight")).map((job) => job.status)).toStrictEqual([
        "delivering"
      ])
      expect(yield* app.messageLog.jobsForMessage("u9-waiting")).toStrictEqual([])
      const status = yield* app.relayAudiences.getDeletion(request.id)
      expect(status.notifications.map((n) => [n.sourceId, n.status])).toStrictEqual([
        ["app", "pending"],
        ["web", "pending"]
      ])
      const missing = yield* Effect.flip(app.relayAudiences.getDeletion("nope"))
      expect(missing._tag).toBe("UnknownDeletion")
      expect(Option.isNone(yield* app.deletionRequests.getDeletion("nope"))).toBe(true)
    }))
})

describe("deletion requests: validation and access", () => {
  it.live("400 naming the field for a bad body, 400 naming unknown sources, 404 for an unknown id", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{}, "userId"],
        [{ userId: "" }, "userId"],
        [{ userId: { id: 1 } }, "userId"],
        [{ userId: "u", sourceIds: "web" }, "sourceIds"],
        [{ userId: "u", sourceIds: [] }, "sourceIds"],
        [{ userId: "u", sourceIds: ["web", ""] }, "sourceIds[1]"],
        [[], ""],
        ["{not json", ""]
      ]
      for (const [body, path] of cases) {
        const answer = yield* admin(app.baseUrl, "POST", "/admin/deletions", { body })
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.errors.map((e: any) => e.path), JSON.stringify(body)).toContain(path)
      }
      const unknown = yield* admin(app.baseUrl, "POST", "/admin/deletions", {
        body: { userId: "u", sourceIds: ["web", "nope", "gone"] }
      })
      expect(unknown.status).toBe(400)
      expect(unknown.body.code).toBe("unknown_sources")
      expect(unknown.body.message).toContain("nope, gone")
      expect(unknown.body.errors.map((e: any) => e.message)).toStrictEqual([
        "no such source: nope",
        "no such source: gone"
      ])

      // A numeric userId becomes its string, as in the tracking API.
      const numeric = yield* admin(app.baseUrl, "POST", "/admin/deletions", { body: { userId: 42 } })
      expect(numeric.status).toBe(202)
      expect((yield* admin(app.baseUrl, "GET", `/admin/deletions/${numeric.body.id}`)).body.userId).toBe("42")

      expect((yield* admin(app.baseUrl, "GET", "/admin/deletions/nope")).status).toBe(404)
      // Nothing was recorded or queued by the refused requests: only the numeric one's two notifications.
      expect((yield* app.outbox.backlog()).pending).toBe(2)
    }))

  it.live("needs the admin token", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const refused = yield* admin(app.baseUrl, "POST", "/admin/deletions", {
        body: { userId: "u" },
        authorization: null
      })
      expect(refused.status).toBe(401)
      expect((yield* admin(app.baseUrl, "GET", "/admin/deletions/x", { authorization: "Bearer wrong" })).status).toBe(
        401
      )
      const disabled = yield* startApp({ admin: false, dispatch: false })
      expect((yield* admin(disabled.baseUrl, "POST", "/admin/deletions", { body: { userId: "u" } })).status).toBe(404)
      expect((yield* app.outbox.backlog()).pending).toBe(0)
    }))
})
