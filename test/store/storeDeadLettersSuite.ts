import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Attempts } from "../../src/store/Attempts.js"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { entry, type FreshStore, hour, second, storeTest, T0, text } from "./storeFixtures.js"

/** The store's behaviour: dead letters (see `storeSuite`). */
export const deadLettersSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("dead letters", () => {
    test(
      "are listed newest first, by source, and replayed with a fresh window",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const attempts = yield* Attempts
        const messageLog = yield* MessageLog
        const deadLetters = yield* DeadLetters
        yield* outbox.enqueue("web", [entry("w1"), entry("w2"), entry("w3")], T0)
        yield* outbox.enqueue("app", [entry("a1")], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
        const id = (messageId: string) => jobs.find((job) => job.messageId === messageId)!.id
        yield* outbox.completeMany("w", [
          {
            _tag: "Dead",
            jobId: id("w1"),
            at: T0 + 1000,
            lastError: "404",
            firstAttemptAt: T0,
            endpointState: { x: 1 }
          },
          { _tag: "Dead", jobId: id("w2"), at: T0 + 3000, lastError: "410" },
          { _tag: "Dead", jobId: id("a1"), at: T0 + 2000, lastError: "timeout" },
          { _tag: "Delivered", jobId: id("w3"), at: T0 + 2000 }
        ])
        yield* attempts.recordAttempts([
          { jobId: id("w1"), url: "https://a.example", attempt: 1, startedAt: T0, durationMs: 3, outcome: "permanent" }
        ])

        const all = yield* deadLetters.listDeadLetters({ limit: 10 })
        assert.deepStrictEqual(all.map((job) => job.messageId), ["w2", "a1", "w1"])
        assert.deepStrictEqual((yield* deadLetters.listDeadLetters({ limit: 1 })).map((job) => job.messageId), ["w2"])
        const web = yield* deadLetters.listDeadLetters({ sourceId: "web", limit: 10 })
        assert.deepStrictEqual(web.map((job) => [job.messageId, job.lastError]), [["w2", "410"], ["w1", "404"]])
        assert.deepStrictEqual(
          (yield* deadLetters.listDeadLetters({ limit: 10, before: T0 + 3000 })).map((job) => job.messageId),
          ["a1", "w1"]
        )

        assert.isFalse(yield* deadLetters.replayDeadLetter(id("w3"), T0 + hour))
        assert.isFalse(yield* deadLetters.replayDeadLetter("unknown", T0 + hour))
        assert.isTrue(yield* deadLetters.replayDeadLetter(id("w1"), T0 + 5 * hour))
        assert.isFalse(yield* deadLetters.replayDeadLetter(id("w1"), T0 + 5 * hour))
        const replayed = Option.getOrThrow(yield* messageLog.getJob(id("w1")))
        assert.deepStrictEqual(
          {
            status: replayed.status,
            nextDueAt: replayed.nextDueAt,
            firstAttemptAt: replayed.firstAttemptAt,
            finishedAt: replayed.finishedAt,
            lastError: replayed.lastError,
            attemptCount: replayed.attemptCount
          },
          {
            status: "pending",
            nextDueAt: T0 + 5 * hour,
            firstAttemptAt: null,
            finishedAt: null,
            lastError: null,
            attemptCount: 0
          }
        )
        assert.deepStrictEqual((yield* deadLetters.listDeadLetters({ limit: 10 })).map((job) => job.messageId), [
          "w2",
          "a1"
        ])
        const [claimed] = yield* outbox.claimDue("w", T0 + 5 * hour, 10, 60 * second)
        assert.deepStrictEqual(
          { id: claimed!.id, state: claimed!.endpointState, first: claimed!.firstAttemptAt },
          { id: id("w1"), state: null, first: null }
        )
        assert.strictEqual(text(claimed!.body), JSON.stringify({ messageId: "w1", type: "track", event: "Clicked" }))
        // History stays with the job.
        assert.strictEqual((yield* messageLog.jobsForMessage("w1"))[0]!.attempts.length, 1)
      })
    )
  })
}
