import { assert, describe, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"
import type { EnqueueEntry } from "../../src/store/index.js"
import { dedupeWindowMs } from "../../src/store/index.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import type { StoreServices } from "../../src/store/Store.js"
import { Usage } from "../../src/store/Usage.js"
import { body, T0 } from "./storeSuite.js"

/**
 * The store's side of the console (REFERENCE §11, §12): delivery latency per day, counted by the
 * completion that counts `delivered`, and the message search. Run against every implementation.
 */

const day = 24 * 60 * 60 * 1000
const midnight = Math.floor(T0 / day) * day
const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10)

const tracked = (messageId: string, userId: string | undefined, event = "Clicked"): EnqueueEntry => ({
  messageId,
  userId,
  type: "track",
  event,
  body: body(JSON.stringify({ messageId, type: "track", event }))
})

export const messageLogStoreSuite = (fresh: () => Layer.Layer<StoreServices, unknown>) => {
  const test = <A, E>(name: string, self: Effect.Effect<A, E, StoreServices>) =>
    it.live(name, () => Effect.provide(self, fresh()))

  describe("delivery latency and message search", () => {
    test(
      "averages (delivered − received) over the jobs delivered each day, in the completion's transaction",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const usageCounts = yield* Usage
        yield* outbox.enqueue("web", ["a", "b", "c", "d", "e"].map((id) => tracked(id, "u")), T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60_000)
        const id = (messageId: string) => jobs.find((job) => job.messageId === messageId)!.id
        yield* outbox.completeMany("w", [
          { _tag: "Delivered", jobId: id("a"), at: T0 + 100 },
          { _tag: "Delivered", jobId: id("b"), at: T0 + 301 },
          // Not delivered: no latency.
          { _tag: "Dead", jobId: id("c"), at: T0 + 5_000, lastError: "410" },
          // Another process's clock behind ours: counted, as zero.
          { _tag: "Delivered", jobId: id("d"), at: T0 - 50 }
        ])
        // The next day: a delivery of its own, 26 h after receipt.
        yield* outbox.completeMany("w", [{ _tag: "Delivered", jobId: id("e"), at: midnight + day + 1000 }])
        // A lease lost (refused completion) counts nothing.
        yield* outbox.completeMany("other", [{ _tag: "Delivered", jobId: id("a"), at: T0 + 999_999 }])

        const usage = yield* usageCounts.usage("web", midnight + day + 2000, 3)
        assert.deepStrictEqual(
          usage.map((u) => [u.day, u.delivered, u.dead, u.averageLatencyMs]),
          [
            [dayString(midnight - day), 0, 0, null],
            [dayString(midnight), 3, 1, Math.round((100 + 301 + 0) / 3)],
            [dayString(midnight + day), 1, 0, midnight + day + 1000 - T0]
          ]
        )
      })
    )

    test(
      "finds a user's messages (of one source or all), newest first, with every job and its attempts",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* outbox.enqueue("web", [tracked("m1", "alice", "Signed Up"), tracked("m2", "bob")], T0)
        yield* outbox.enqueue("web", [tracked("m3", "alice", "Ordered"), {
          messageId: "f",
          userId: "alice",
          filtered: true
        }], T0 + 10)
        yield* outbox.enqueue("app", [tracked("m1", "alice", "Opened")], T0 + 20)
        const [notice] = yield* outbox.insertJobs([
          { sourceId: "web", messageId: "del-1", userId: "alice", kind: "delete", body: body("{}") }
        ], T0 + 30)
        yield* outbox.insertJobs([
          { sourceId: "app", messageId: "aud-1", userId: "alice", kind: "audience", body: body("{}") }
        ], T0 + 40)
        const claimed = yield* outbox.claimDue("w", T0 + 50, 10, 60_000)
        const webM1 = claimed.find((job) => job.sourceId === "web" && job.messageId === "m1")!
        yield* outbox.completeMany("w", [{ _tag: "Delivered", jobId: webM1.id, at: T0 + 60 }], [
          {
            jobId: webM1.id,
            url: "https://a.example",
            attempt: 1,
            startedAt: T0 + 55,
            durationMs: 5,
            statusCode: 200,
            outcome: "success",
            responseSnippet: "ok"
          }
        ])

        const alice = yield* messageLog.searchMessages({ userId: "alice", limit: 50 })
        assert.deepStrictEqual(
          alice.map((m) => [m.sourceId, m.messageId, m.type, m.event, m.receivedAt]),
          [
            ["app", "aud-1", "identify", null, T0 + 40],
            ["web", "del-1", "delete", null, T0 + 30],
            ["app", "m1", "track", "Opened", T0 + 20],
            ["web", "m3", "track", "Ordered", T0 + 10],
            ["web", "m1", "track", "Signed Up", T0]
          ]
        )
        // Jobs are the same records `jobsForMessage` returns, limited to the message's source.
        const webM1Record = alice[4]!
        assert.deepStrictEqual(
          webM1Record.jobs,
          (yield* messageLog.jobsForMessage("m1")).filter((job) => job.sourceId === "web")
        )
        assert.strictEqual(webM1Record.jobs[0]!.status, "delivered")
        assert.deepStrictEqual(webM1Record.jobs[0]!.attempts.map((a) => [a.statusCode, a.responseSnippet]), [[
          200,
          "ok"
        ]])
        assert.strictEqual(alice[1]!.jobs[0]!.id, notice)

        const ofWeb = yield* messageLog.searchMessages({ userId: "alice", sourceId: "web", limit: 2 })
        assert.deepStrictEqual(ofWeb.map((m) => m.messageId), ["del-1", "m3"])
        assert.deepStrictEqual(
          (yield* messageLog.searchMessages({ sourceId: "web", limit: 10 })).map((m) => m.messageId),
          [
            "del-1",
            "m3",
            "m2",
            "m1"
          ]
        )
        assert.deepStrictEqual(yield* messageLog.searchMessages({ userId: "nobody", limit: 10 }), [])
        assert.deepStrictEqual(yield* messageLog.searchMessages({ limit: 10 }), [])
      })
    )

    test(
      "a message ingested again after the dedupe window is one record with both jobs, received at the newer",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* outbox.enqueue("web", [tracked("again", "carol")], T0)
        const later = T0 + dedupeWindowMs + 1
        assert.strictEqual((yield* outbox.enqueue("web", [tracked("again", "carol")], later)).jobsCreated, 1)
        const [record] = yield* messageLog.searchMessages({ userId: "carol", limit: 10 })
        assert.strictEqual(record!.receivedAt, later)
        assert.deepStrictEqual(record!.jobs.map((job) => job.createdAt), [T0, later])
        const [bySource] = yield* messageLog.searchMessages({ sourceId: "web", limit: 10 })
        assert.deepStrictEqual(bySource, record)
      })
    )
  })
}
