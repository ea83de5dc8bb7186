import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { dedupeWindowMs, StoreError } from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import { body, entry, type FreshStore, hour, ids, second, storeTest, T0, text } from "./storeFixtures.js"

/** The store's behaviour: enqueue (see `storeSuite`). */
export const enqueueSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("enqueue", () => {
    test(
      "accepts, dedupes within the request, creates jobs only for bodies",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const result = yield* outbox.enqueue("web", [
          entry("m1", "u1"),
          entry("m2"),
          { messageId: "m3", userId: "u3", filtered: true },
          entry("m1", "u1-again"),
          entry("m4")
        ], T0)
        assert.strictEqual(result.accepted, 4)
        assert.strictEqual(result.duplicates, 1)
        assert.strictEqual(result.jobsCreated, 3)
        assert.strictEqual(result.jobIds.length, 3)
        assert.deepStrictEqual(result.duplicateMessageIds, ["m1"])

        const jobs = yield* outbox.claimDue("w", T0, 10, 30 * second)
        assert.deepStrictEqual(jobs.map((job) => job.messageId).sort(), ["m1", "m2", "m4"])
        assert.deepStrictEqual(ids(jobs).sort(), [...result.jobIds].sort())
        const m1 = jobs.find((job) => job.messageId === "m1")!
        // The first occurrence wins, and the body bytes come back exactly.
        assert.strictEqual(m1.userId, "u1")
        assert.strictEqual(text(m1.body), JSON.stringify({ messageId: "m1", type: "track", event: "Clicked" }))
        assert.deepStrictEqual(
          { kind: m1.kind, sourceId: m1.sourceId, firstAttemptAt: m1.firstAttemptAt, attemptCount: m1.attemptCount },
          { kind: "message", sourceId: "web", firstAttemptAt: null, attemptCount: 0 }
        )
        assert.strictEqual(m1.createdAt, T0)
        assert.strictEqual(m1.nextDueAt, T0)
        assert.isNull(m1.endpointState)
        assert.strictEqual(m1.leaseExpiresAt, T0 + 30 * second)
        assert.strictEqual(jobs.find((job) => job.messageId === "m2")!.userId, null)
      })
    )

    test(
      "a message id repeated 23 h later is a duplicate, 25 h later it is not",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        assert.strictEqual((yield* outbox.enqueue("web", [entry("m1")], T0)).jobsCreated, 1)

        const again = yield* outbox.enqueue("web", [entry("m1"), entry("m2")], T0 + 23 * hour)
        assert.deepStrictEqual(
          { accepted: again.accepted, duplicates: again.duplicates, jobs: again.jobsCreated },
          { accepted: 1, duplicates: 1, jobs: 1 }
        )
        assert.deepStrictEqual(again.duplicateMessageIds, ["m1"])

        // Another source may use the same message id.
        assert.strictEqual((yield* outbox.enqueue("app", [entry("m1")], T0 + 23 * hour)).duplicates, 0)

        // 25 h after it was first seen the id is new again (and seen from then on).
        const later = yield* outbox.enqueue("web", [entry("m1")], T0 + 25 * hour)
        assert.deepStrictEqual({ accepted: later.accepted, duplicates: later.duplicates }, {
          accepted: 1,
          duplicates: 0
        })
        assert.strictEqual((yield* outbox.enqueue("web", [entry("m1")], T0 + 26 * hour)).duplicates, 1)
        // Exactly at the window's end it counts as unseen.
        assert.strictEqual((yield* outbox.enqueue("web", [entry("m2")], T0 + 23 * hour + dedupeWindowMs)).accepted, 1)

        const jobs = yield* outbox.claimDue("w", T0 + 48 * hour, 100, second)
        const describe = jobs.map((job) => `${job.sourceId}/${job.messageId}@${(job.nextDueAt - T0) / hour}h`)
        assert.deepStrictEqual(describe.sort(), ["app/m1@23h", "web/m1@0h", "web/m1@25h", "web/m2@23h", "web/m2@47h"])
      })
    )

    test(
      "a failed enqueue leaves nothing behind",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        // A NULL body violates NOT NULL after the seen rows were written: all of it rolls back.
        const broken = [entry("m1"), { messageId: "m2", body: null as unknown as Uint8Array }]
        const error = yield* Effect.flip(outbox.enqueue("web", broken, T0))
        assert.instanceOf(error, StoreError)
        assert.strictEqual(error.operation, "enqueue")
        const retried = yield* outbox.enqueue("web", [entry("m1"), entry("m2")], T0 + second)
        assert.deepStrictEqual({ accepted: retried.accepted, duplicates: retried.duplicates }, {
          accepted: 2,
          duplicates: 0
        })
        assert.strictEqual((yield* outbox.backlog()).pending, 2)
      })
    )

    test(
      "large requests are split under the parameter limits",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const entries = Array.from({ length: 2500 }, (_, i) => entry(`m${i}`, `u${i % 7}`))
        const result = yield* outbox.enqueue("web", entries, T0)
        assert.strictEqual(result.jobsCreated, 2500)
        assert.strictEqual(new Set(result.jobIds).size, 2500)
        const again = yield* outbox.enqueue("web", entries, T0 + 1)
        assert.strictEqual(again.duplicates, 2500)
        assert.strictEqual((yield* outbox.backlog()).pending, 2500)
      })
    )

    test(
      "insertJobs adds jobs without deduplication",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const jobIds = yield* outbox.insertJobs([
          { sourceId: "web", messageId: "del-1", userId: "u1", kind: "delete", body: body("{}") },
          { sourceId: "web", messageId: "del-1", userId: "u1", kind: "delete", body: body("{}") }
        ], T0)
        assert.strictEqual(jobIds.length, 2)
        const jobs = yield* outbox.claimDue("w", T0, 10, second)
        assert.deepStrictEqual(jobs.map((job) => job.kind), ["delete", "delete"])
        assert.deepStrictEqual(jobs.map((job) => job.destinationId), ["webhooks", "webhooks"])
      })
    )
  })
}
