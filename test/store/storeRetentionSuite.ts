import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import type { ClaimedJob } from "../../src/store/index.js"
import { purgeExpired } from "../../src/store/index.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import { Usage } from "../../src/store/Usage.js"
import { entry, type FreshStore, hour, second, storeTest, T0 } from "./storeFixtures.js"

/** The store's behaviour: retention and usage (see `storeSuite`). */
export const retentionSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("retention and usage", () => {
    test(
      "purges delivered jobs and their attempts past retention, keeps the rest",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        const purge = yield* Purge
        yield* outbox.enqueue("web", [entry("old"), entry("new"), entry("dead"), entry("pending")], T0)
        const jobs = yield* outbox.claimDue("w", T0, 3, 60 * second)
        const id = (messageId: string) => jobs.find((job) => job.messageId === messageId)?.id
        const attempt = (jobId: string) => ({
          jobId,
          url: "https://a.example",
          attempt: 1,
          startedAt: T0,
          durationMs: 1,
          outcome: "success" as const
        })
        const [oldId, newId, deadId] = ["old", "new", "dead"].map((m) => id(m)!)
        yield* outbox.completeMany("w", [
          { _tag: "Delivered", jobId: oldId!, at: T0 + 1000 },
          { _tag: "Delivered", jobId: newId!, at: T0 + 3 * 24 * hour },
          { _tag: "Dead", jobId: deadId!, at: T0 + 1000, lastError: "404" }
        ], [attempt(oldId!), attempt(newId!), attempt(deadId!)])

        const now = T0 + 8 * 24 * hour
        const purged = yield* purgeExpired(now, "7 days")
        assert.deepStrictEqual(purged, { delivered: 1, seen: 4 })
        assert.deepStrictEqual(yield* messageLog.jobsForMessage("old"), [])
        assert.strictEqual((yield* messageLog.jobsForMessage("new"))[0]!.attempts.length, 1)
        assert.strictEqual((yield* messageLog.jobsForMessage("dead"))[0]!.attempts.length, 1)
        assert.deepStrictEqual(yield* outbox.backlog(), { pending: 1, delivering: 0, delivered: 1, dead: 1 })
        // Forgotten ids are new again.
        assert.strictEqual((yield* outbox.enqueue("web", [entry("old")], now)).accepted, 1)

        // Dead letters go only by explicit purge.
        assert.strictEqual(yield* purge.purgeDeadLetters({ olderThan: now, sourceId: "app" }), 0)
        assert.strictEqual(yield* purge.purgeDeadLetters({ olderThan: now }), 1)
        assert.deepStrictEqual(yield* messageLog.jobsForMessage("dead"), [])
        assert.strictEqual(yield* purge.purgeDelivered(now - 7 * 24 * hour), 0)
      })
    )

    test(
      "purges in chunks",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const purge = yield* Purge
        yield* outbox.enqueue("web", Array.from({ length: 2300 }, (_, i) => entry(`m${i}`)), T0)
        const jobs = yield* outbox.claimDue("w", T0, 3000, 60 * second)
        yield* outbox.completeMany("w", jobs.map((job) => ({ _tag: "Delivered" as const, jobId: job.id, at: T0 })))
        assert.strictEqual(yield* purge.purgeDelivered(T0 + 1), 2300)
        assert.strictEqual(yield* purge.purgeSeen(T0 + 1), 2300)
        assert.deepStrictEqual(yield* outbox.backlog(), { pending: 0, delivering: 0, delivered: 0, dead: 0 })
      })
    )

    test(
      "counts usage per source and UTC day",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const usageCounts = yield* Usage
        const day = 24 * hour
        const midnight = Math.floor(T0 / day) * day
        yield* outbox.enqueue("web", [entry("m1"), entry("m2"), { messageId: "f1", filtered: true }, entry("m1")], T0)
        yield* outbox.enqueue("web", [entry("m1")], T0 + 1)
        yield* usageCounts.addUsage("web", T0, { apiCalls: 1 })
        const jobs = yield* outbox.claimDue("w", T0, 10, hour)
        yield* outbox.completeMany("w", [
          { _tag: "Delivered", jobId: jobs[0]!.id, at: midnight + day + 5 },
          { _tag: "Dead", jobId: jobs[1]!.id, at: midnight + day + 6, lastError: "x" }
        ])
        const usage = yield* usageCounts.usage("web", midnight + day + 10, 3)
        const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10)
        const zeros = { apiCalls: 0, messages: 0, filtered: 0, delivered: 0, dead: 0, averageLatencyMs: null }
        assert.deepStrictEqual(usage, [
          { ...zeros, day: dayString(midnight - day) },
          { ...zeros, day: dayString(midnight), apiCalls: 3, messages: 3, filtered: 1 },
          // The delivered job was received at T0: its latency is the whole wait; the dead one has none.
          { ...zeros, day: dayString(midnight + day), delivered: 1, dead: 1, averageLatencyMs: midnight + day + 5 - T0 }
        ])
        assert.deepStrictEqual((yield* usageCounts.usage("app", T0, 1)).map((u) => u.messages), [0])
      })
    )

    test(
      "counts a delivery from the source and creation time its claim gave as from the job itself",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const usageCounts = yield* Usage
        yield* outbox.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        const [first, second, third] = yield* outbox.claimDue("w", T0 + 10, 10, hour)
        const fromClaim = (job: ClaimedJob, at: number) =>
          ({ _tag: "Delivered", jobId: job.id, at, sourceId: job.sourceId, createdAt: job.createdAt }) as const
        const result = yield* outbox.completeMany("w", [
          fromClaim(first!, T0 + 100),
          { _tag: "Delivered", jobId: second!.id, at: T0 + 300 }
        ])
        assert.deepStrictEqual([...result.applied].sort(), [first!.id, second!.id].sort())
        // A lease this owner does not hold: refused, not counted, whatever the caller says of the job.
        const refused = yield* outbox.completeMany("other", [fromClaim(third!, T0 + 500)])
        assert.deepStrictEqual(refused.refused, [third!.id])
        const [today] = yield* usageCounts.usage("web", T0, 1)
        assert.strictEqual(today!.delivered, 2)
        assert.strictEqual(today!.averageLatencyMs, (100 + 300) / 2)
      })
    )
  })
}
