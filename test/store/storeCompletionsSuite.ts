import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Attempts } from "../../src/store/Attempts.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { entry, type FreshStore, second, storeTest, T0 } from "./storeFixtures.js"

/** The store's behaviour: completions (see `storeSuite`). */
export const completionsSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("completions", () => {
    test(
      "reschedule, then dead; delivered; the batched form refuses what it does not hold",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* outbox.enqueue("web", [entry("m1"), entry("m2"), entry("m3"), entry("m4")], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
        const byMessage = new Map(jobs.map((job) => [job.messageId, job.id]))
        const m1 = byMessage.get("m1")!

        const state = { urls: { "https://example.com/hook": { attempts: 1 } }, retired: [] }
        assert.isTrue(yield* outbox.reschedule("w", m1, T0 + 10 * second, T0 + 1, state, "HTTP 503"))
        const rescheduled = Option.getOrThrow(yield* messageLog.getJob(m1))
        assert.deepStrictEqual(
          {
            status: rescheduled.status,
            nextDueAt: rescheduled.nextDueAt,
            firstAttemptAt: rescheduled.firstAttemptAt,
            lastError: rescheduled.lastError,
            leaseOwner: rescheduled.leaseOwner
          },
          {
            status: "pending",
            nextDueAt: T0 + 10 * second,
            firstAttemptAt: T0 + 1,
            lastError: "HTTP 503",
            leaseOwner: null
          }
        )
        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 + 9 * second, 10, 60 * second), [])
        const [back] = yield* outbox.claimDue("w", T0 + 10 * second, 10, 60 * second)
        assert.strictEqual(back!.id, m1)
        assert.deepStrictEqual(back!.endpointState, state)
        assert.strictEqual(back!.firstAttemptAt, T0 + 1)

        // A later reschedule never moves the window's start.
        assert.isTrue(yield* outbox.reschedule("w", m1, T0 + 20 * second, T0 + 999, { n: 2 }, null))
        const [again] = yield* outbox.claimDue("w", T0 + 20 * second, 10, 60 * second)
        assert.strictEqual(again!.firstAttemptAt, T0 + 1)
        assert.deepStrictEqual(again!.endpointState, { n: 2 })
        assert.isTrue(yield* outbox.markDead("w", m1, T0 + 21 * second, "all URLs failed"))
        const dead = Option.getOrThrow(yield* messageLog.getJob(m1))
        assert.deepStrictEqual(
          { status: dead.status, finishedAt: dead.finishedAt, lastError: dead.lastError },
          { status: "dead", finishedAt: T0 + 21 * second, lastError: "all URLs failed" }
        )

        const result = yield* outbox.completeMany("w", [
          { _tag: "Delivered", jobId: byMessage.get("m2")!, at: T0 + 30 * second, firstAttemptAt: T0 + 2 },
          { _tag: "Dead", jobId: byMessage.get("m3")!, at: T0 + 30 * second, lastError: "HTTP 404" },
          {
            _tag: "Retry",
            jobId: byMessage.get("m4")!,
            nextDueAt: T0 + 40 * second,
            firstAttemptAt: T0 + 3,
            endpointState: [1, 2],
            lastError: "timeout"
          },
          { _tag: "Delivered", jobId: m1, at: T0 + 30 * second },
          { _tag: "Delivered", jobId: "unknown", at: T0 + 30 * second }
        ])
        assert.deepStrictEqual(
          [...result.applied].sort(),
          [byMessage.get("m2"), byMessage.get("m3"), byMessage.get("m4")].sort()
        )
        assert.deepStrictEqual([...result.refused].sort(), [m1, "unknown"].sort())
        assert.strictEqual(Option.getOrThrow(yield* messageLog.getJob(m1)).status, "dead")
        const delivered = Option.getOrThrow(yield* messageLog.getJob(byMessage.get("m2")!))
        assert.deepStrictEqual(
          { status: delivered.status, firstAttemptAt: delivered.firstAttemptAt },
          { status: "delivered", firstAttemptAt: T0 + 2 }
        )
        assert.deepStrictEqual(yield* outbox.backlog(), { pending: 1, delivering: 0, delivered: 1, dead: 2 })
        assert.deepStrictEqual(yield* outbox.nextWakeAt(), Option.some(T0 + 40 * second))
        assert.deepStrictEqual(yield* outbox.completeMany("w", []), { applied: [], refused: [] })
      })
    )

    test(
      "attempts are recorded and returned with jobsForMessage",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const attempts = yield* Attempts
        const messageLog = yield* MessageLog
        yield* outbox.enqueue("web", [entry("m1", "u1")], T0)
        yield* outbox.enqueue("app", [entry("m1")], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
        const web = jobs.find((job) => job.sourceId === "web")!
        const app = jobs.find((job) => job.sourceId === "app")!

        assert.isTrue(yield* attempts.markFirstAttempt(web.id, T0 + 1))
        assert.isFalse(yield* attempts.markFirstAttempt(web.id, T0 + 2))
        const long = "é".repeat(600) // 1 200 bytes
        yield* attempts.recordAttempts([
          {
            jobId: web.id,
            url: "https://a.example/x",
            attempt: 1,
            startedAt: T0 + 1,
            durationMs: 5000,
            error: "timeout",
            outcome: "retryable"
          },
          {
            jobId: web.id,
            url: "https://b.example/y",
            attempt: 1,
            startedAt: T0 + 2,
            durationMs: 12,
            statusCode: 500,
            outcome: "retryable",
            responseSnippet: long
          }
        ])
        const completed = yield* outbox.completeMany("w", [{ _tag: "Delivered", jobId: web.id, at: T0 + 3000 }], [
          {
            jobId: web.id,
            url: "https://a.example/x",
            attempt: 2,
            startedAt: T0 + 2000,
            durationMs: 40,
            statusCode: 200,
            outcome: "success",
            responseSnippet: "ok"
          }
        ])
        assert.deepStrictEqual(completed.applied, [web.id])

        const found = yield* messageLog.jobsForMessage("m1")
        assert.strictEqual(found.length, 2)
        const webJob = found.find((job) => job.id === web.id)!
        assert.strictEqual(webJob.status, "delivered")
        assert.strictEqual(webJob.attemptCount, 3)
        assert.strictEqual(webJob.userId, "u1")
        assert.strictEqual(webJob.firstAttemptAt, T0 + 1)
        assert.deepStrictEqual(webJob.attempts.map((a) => [a.url, a.attempt, a.outcome, a.statusCode, a.error]), [
          ["https://a.example/x", 1, "retryable", null, "timeout"],
          ["https://b.example/y", 1, "retryable", 500, null],
          ["https://a.example/x", 2, "success", 200, null]
        ])
        assert.deepStrictEqual(webJob.attempts.map((a) => [a.startedAt, a.durationMs]), [
          [T0 + 1, 5000],
          [T0 + 2, 12],
          [T0 + 2000, 40]
        ])
        const snippet = webJob.attempts[1]!.responseSnippet!
        assert.strictEqual(snippet, "é".repeat(512))
        assert.strictEqual(webJob.attempts[2]!.responseSnippet, "ok")
        const appJob = found.find((job) => job.id === app.id)!
        assert.deepStrictEqual({ status: appJob.status, attempts: appJob.attempts }, {
          status: "delivering",
          attempts: []
        })

        // A refused completion still records its attempts (they happened) and counts them.
        const refused = yield* outbox.completeMany(
          "not-the-owner",
          [{ _tag: "Delivered", jobId: app.id, at: T0 + 5 }],
          [
            {
              jobId: app.id,
              url: "https://c.example",
              attempt: 1,
              startedAt: T0 + 4,
              durationMs: 1,
              outcome: "success"
            }
          ]
        )
        assert.deepStrictEqual(refused, { applied: [], refused: [app.id] })
        const appAfter = (yield* messageLog.jobsForMessage("m1")).find((job) => job.id === app.id)!
        assert.deepStrictEqual(
          { status: appAfter.status, count: appAfter.attemptCount, attempts: appAfter.attempts.length },
          { status: "delivering", count: 1, attempts: 1 }
        )
        assert.deepStrictEqual(yield* messageLog.jobsForMessage("nope"), [])
      })
    )
  })
}
