import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Attempts } from "../../src/store/Attempts.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { entry, type FreshStore, hour, ids, second, storeTest, type SuiteOptions, T0 } from "./storeFixtures.js"

/** The store's behaviour: claiming (see `storeSuite`). */
export const claimSuite = (fresh: FreshStore, options: SuiteOptions) => {
  const test = storeTest(fresh)

  describe("claiming", () => {
    test(
      "a job's trace context goes through enqueue and every claim; a job without one carries nothing",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        yield* outbox.enqueue("web", [entry("traced-1"), entry("traced-2")], T0, { traceparent })
        yield* outbox.enqueue("web", [entry("plain")], T0)
        yield* outbox.enqueue("app", [entry("other-source")], T0, { traceparent })
        const claimed = yield* outbox.claimDue("w", T0, 10, second)
        const byMessage = new Map(claimed.map((job) => [job.messageId, job]))
        assert.strictEqual(byMessage.get("traced-1")?.traceparent, traceparent)
        assert.strictEqual(byMessage.get("traced-2")?.traceparent, traceparent)
        assert.isFalse("traceparent" in byMessage.get("plain")!)
        // A lease taken over after it expired, and a claim that leaves sources out, carry it too.
        const retaken = yield* outbox.claimDue("w2", T0 + 2 * second, 10, second)
        assert.deepStrictEqual(
          retaken.map((job) => [job.messageId, job.traceparent ?? null]).sort(),
          [["other-source", traceparent], ["plain", null], ["traced-1", traceparent], ["traced-2", traceparent]]
        )
        yield* outbox.enqueue("web", [entry("late")], T0 + 3 * second, { traceparent })
        const leftOut = yield* outbox.claimDue("w3", T0 + 3 * second, 10, second, {
          excludeSourceIds: ["app"],
          expired: false
        })
        assert.deepStrictEqual(leftOut.map((job) => [job.messageId, job.traceparent]), [["late", traceparent]])
      })
    )

    test(
      "claims only due jobs, up to the limit, in due order",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [entry("a")], T0)
        yield* outbox.enqueue("web", [entry("b"), entry("c")], T0 + 10)
        yield* outbox.enqueue("web", [entry("d")], T0 + 20)

        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 - 1, 10, second), [])
        const first = yield* outbox.claimDue("w", T0 + 10, 2, second)
        assert.deepStrictEqual(first.map((job) => job.messageId), ["a", first[1]!.messageId])
        assert.include(["b", "c"], first[1]!.messageId)
        const second_ = yield* outbox.claimDue("w", T0 + 10, 10, second)
        assert.strictEqual(second_.length, 1)
        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 + 19, 10, second), [])
        assert.deepStrictEqual((yield* outbox.claimDue("w", T0 + 20, 10, second)).map((job) => job.messageId), ["d"])
        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 + 20, 10, second), [])
        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 + 20, 0, second), [])
      })
    )

    test(
      "concurrent claimers never get the same job",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const total = 300
        for (let i = 0; i < total; i += 100) {
          yield* outbox.enqueue(
            "web",
            Array.from({ length: 100 }, (_, j) => entry(`m${i + j}`)),
            T0 + i
          )
        }
        const claimer = (owner: string) =>
          Effect.gen(function*() {
            const mine: Array<string> = []
            while (true) {
              const jobs = yield* outbox.claimDue(owner, T0 + hour, 7, 60 * second)
              if (jobs.length === 0) return mine
              for (const job of jobs) mine.push(job.id)
              yield* Effect.yieldNow
            }
          })
        const results = yield* Effect.all(
          ["w1", "w2", "w3", "w4", "w5", "w6"].map(claimer),
          { concurrency: "unbounded" }
        )
        const all = results.flat()
        assert.strictEqual(all.length, total)
        assert.strictEqual(new Set(all).size, total)
        const backlog = yield* outbox.backlog()
        assert.deepStrictEqual(backlog, { pending: 0, delivering: total, delivered: 0, dead: 0 })
      })
    )

    test(
      "an expired lease is taken over; the old owner's completion is refused",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const attempts = yield* Attempts
        const messageLog = yield* MessageLog
        yield* outbox.enqueue("web", [entry("m1")], T0)
        const [job] = yield* outbox.claimDue("old", T0, 10, 30 * second)
        assert.isDefined(job)
        yield* attempts.markFirstAttempt(job.id, T0 + 1)

        // Still leased: nobody else gets it.
        assert.deepStrictEqual(yield* outbox.claimDue("new", T0 + 29 * second, 10, 30 * second), [])
        const taken = yield* outbox.claimDue("new", T0 + 30 * second, 10, 30 * second)
        assert.deepStrictEqual(ids(taken), [job.id])
        // The retry window survives the takeover.
        assert.strictEqual(taken[0]!.firstAttemptAt, T0 + 1)
        assert.strictEqual(taken[0]!.leaseExpiresAt, T0 + 60 * second)

        assert.isFalse(yield* outbox.markDelivered("old", job.id, T0 + 31 * second))
        assert.isFalse(yield* outbox.reschedule("old", job.id, T0 + hour, T0 + 1, { a: 1 }, "boom"))
        assert.isFalse(yield* outbox.markDead("old", job.id, T0 + 31 * second, "boom"))
        assert.deepStrictEqual(yield* outbox.renewLeases("old", [job.id], T0 + hour), [])
        assert.strictEqual(yield* outbox.releaseLeases("old"), 0)
        assert.strictEqual(Option.getOrThrow(yield* messageLog.getJob(job.id)).leaseOwner, "new")

        assert.isTrue(yield* outbox.markDelivered("new", job.id, T0 + 32 * second))
        const done = Option.getOrThrow(yield* messageLog.getJob(job.id))
        assert.deepStrictEqual(
          { status: done.status, finishedAt: done.finishedAt, leaseOwner: done.leaseOwner },
          { status: "delivered", finishedAt: T0 + 32 * second, leaseOwner: null }
        )
        // Completing twice is refused too: the job is no longer delivering.
        assert.isFalse(yield* outbox.markDelivered("new", job.id, T0 + 33 * second))
      })
    )

    test(
      "claims can leave some sources' jobs for later",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [entry("w1"), entry("w2")], T0)
        yield* outbox.enqueue("app", [entry("a1")], T0 + 1)
        yield* outbox.enqueue("cli", [entry("c1")], T0 + 2)
        const first = yield* outbox.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web", "cli"] })
        assert.deepStrictEqual(first.map((job) => job.messageId), ["a1"])
        const rest = yield* outbox.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: [] })
        assert.deepStrictEqual(rest.map((job) => job.messageId).sort(), ["c1", "w1", "w2"])
        // Expired leases obey the exclusion too.
        const taken = yield* outbox.claimDue("x", T0 + 10 + second, 10, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(taken.map((job) => job.messageId).sort(), ["a1", "c1"])
      })
    )

    test(
      "a claim that leaves a source out takes the earliest due jobs of all the others, in due order",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        // The left-out source's due jobs come first in due order, as a full mailbox's backlog does.
        yield* outbox.enqueue("web", Array.from({ length: 50 }, (_, i) => entry(`w${i}`)), T0)
        yield* outbox.enqueue("cli", [entry("c1"), entry("c2")], T0 + 1)
        yield* outbox.enqueue("app", [entry("a1"), entry("a2"), entry("a3")], T0 + 3)
        yield* outbox.enqueue("cli", [entry("c3")], T0 + 5)
        yield* outbox.enqueue("app", [entry("a4")], T0 + 100)
        const first = yield* outbox.claimDue("w", T0 + 10, 4, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(first.map((job) => job.messageId), ["c1", "c2", "a1", "a2"])
        // a4 is not due yet.
        const second_ = yield* outbox.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(second_.map((job) => job.messageId), ["a3", "c3"])
        assert.deepStrictEqual(yield* outbox.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web"] }), [])
        const web = yield* outbox.claimDue("w", T0 + 10, 100, second, { excludeSourceIds: ["app"] })
        assert.deepStrictEqual(web.map((job) => job.messageId), Array.from({ length: 50 }, (_, i) => `w${i}`))
      })
    )

    test(
      options.shared
        ? "leases are not recovered at start on a shared database"
        : "at start, jobs a dead process left delivering go back to pending",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        yield* outbox.claimDue("dead-process", T0, 2, hour)
        const recovered = yield* outbox.recoverAbandonedLeases()
        if (options.shared) {
          assert.strictEqual(recovered, 0)
          assert.strictEqual((yield* outbox.backlog()).delivering, 2)
          return
        }
        assert.strictEqual(recovered, 2)
        assert.deepStrictEqual(yield* outbox.backlog(), { pending: 3, delivering: 0, delivered: 0, dead: 0 })
        assert.strictEqual((yield* outbox.claimDue("new", T0 + 1, 10, hour)).length, 3)
      })
    )

    test(
      "renewing a lease keeps the job from being taken over",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [entry("m1"), entry("m2")], T0)
        const jobs = yield* outbox.claimDue("a", T0, 10, 10 * second)
        const renewed = yield* outbox.renewLeases("a", [...ids(jobs), "unknown"], T0 + 60 * second)
        assert.deepStrictEqual([...renewed].sort(), ids(jobs).sort())
        assert.deepStrictEqual(yield* outbox.claimDue("b", T0 + 30 * second, 10, second), [])
        assert.strictEqual((yield* outbox.claimDue("b", T0 + 60 * second, 10, second)).length, 2)
        assert.deepStrictEqual(yield* outbox.nextWakeAt(), Option.some(T0 + 61 * second))
      })
    )

    test(
      "releasing leases on shutdown makes the jobs claimable again, window kept",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const attempts = yield* Attempts
        yield* outbox.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        const jobs = yield* outbox.claimDue("a", T0, 10, 60 * second)
        yield* attempts.markFirstAttempt(jobs[0]!.id, T0 + 5)
        yield* outbox.enqueue("web", [entry("m4")], T0)
        yield* outbox.claimDue("b", T0, 10, 60 * second)

        assert.strictEqual(yield* outbox.releaseLeases("a", [jobs[2]!.id]), 1)
        assert.strictEqual(yield* outbox.releaseLeases("a"), 2)
        assert.deepStrictEqual(yield* outbox.backlog(), { pending: 3, delivering: 1, delivered: 0, dead: 0 })
        const again = yield* outbox.claimDue("c", T0 + 1, 10, 60 * second)
        assert.deepStrictEqual(ids(again).sort(), ids(jobs).sort())
        assert.strictEqual(again.find((job) => job.id === jobs[0]!.id)!.firstAttemptAt, T0 + 5)
      })
    )
  })
}
