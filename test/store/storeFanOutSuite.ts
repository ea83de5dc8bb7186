import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import { Sources } from "../../src/store/Sources.js"
import { Usage } from "../../src/store/Usage.js"
import { entry, type FreshStore, second, source, storeTest, T0, text } from "./storeFixtures.js"

/** The store's behaviour: a message with a job per destination (REFERENCE §1a; see `storeSuite`). */
export const fanOutSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)
  const fanOut = (messageId: string, destinationIds: ReadonlyArray<string>) => ({ ...entry(messageId), destinationIds })

  describe("fan-out", () => {
    test(
      "a message makes one job per destination, deduped once per source",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const log = yield* MessageLog
        // `z1` first: on SQLite, `a1` then lands below the index's greatest id and goes through the message id log.
        const first = yield* outbox.enqueue("web", [fanOut("z1", ["webhooks", "crm"])], T0)
        assert.strictEqual(first.jobsCreated, 2)
        const result = yield* outbox.enqueue("web", [
          fanOut("a1", ["webhooks", "crm", "warehouse"]),
          entry("a2"),
          fanOut("a3", ["crm"])
        ], T0 + 1)
        assert.deepStrictEqual({ accepted: result.accepted, jobs: result.jobsCreated }, { accepted: 3, jobs: 5 })
        assert.strictEqual(new Set(result.jobIds).size, 5)

        const again = yield* outbox.enqueue("web", [fanOut("a1", ["webhooks", "crm", "warehouse"])], T0 + 2)
        assert.deepStrictEqual({ duplicates: again.duplicates, jobs: again.jobsCreated }, { duplicates: 1, jobs: 0 })

        const jobs = yield* outbox.claimDue("w", T0 + 2, 100, second)
        const routed = jobs.map((job) => `${job.messageId}>${job.destinationId}`).sort()
        assert.deepStrictEqual(routed, [
          "a1>crm",
          "a1>warehouse",
          "a1>webhooks",
          "a2>webhooks",
          "a3>crm",
          "z1>crm",
          "z1>webhooks"
        ])
        // Every job of a message carries its exact bytes, whether stored with the job or once for the message.
        for (const job of jobs) assert.strictEqual(text(job.body), text(entry(job.messageId).body!))

        for (const [messageId, expected] of [["a1", ["crm", "warehouse", "webhooks"]], ["z1", ["crm", "webhooks"]]]) {
          const found = yield* log.jobsForMessage(messageId as string)
          assert.deepStrictEqual(found.map((job) => job.destinationId).sort(), expected)
        }
      })
    )

    test(
      "the shared body outlives its delivered siblings: a dead letter replayed after they were purged still has it",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [fanOut("m1", ["webhooks", "crm", "warehouse"])], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
        const byDestination = new Map(jobs.map((job) => [job.destinationId, job.id]))
        yield* outbox.completeMany("w", [
          { _tag: "Delivered", jobId: byDestination.get("webhooks")!, at: T0 + second },
          { _tag: "Delivered", jobId: byDestination.get("crm")!, at: T0 + second },
          { _tag: "Dead", jobId: byDestination.get("warehouse")!, at: T0 + second, lastError: "HTTP 400" }
        ])
        assert.strictEqual(yield* (yield* Purge).purgeDelivered(T0 + 2 * second), 2)
        assert.isTrue(yield* (yield* DeadLetters).replayDeadLetter(byDestination.get("warehouse")!, T0 + 3 * second))
        const [replayed] = yield* outbox.claimDue("w", T0 + 3 * second, 10, 60 * second)
        assert.deepStrictEqual(
          { id: replayed?.id, destinationId: replayed?.destinationId, body: text(replayed!.body) },
          { id: byDestination.get("warehouse"), destinationId: "warehouse", body: text(entry("m1").body!) }
        )
      })
    )

    test(
      "a job's delivery or dead letter counts for its destination, the messages for the source (REFERENCE §11)",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const usage = yield* Usage
        yield* outbox.enqueue("web", [fanOut("m1", ["webhooks", "crm", "warehouse"]), fanOut("m2", ["crm"])], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
        const job = (messageId: string, destinationId: string) =>
          jobs.find((j) => j.messageId === messageId && j.destinationId === destinationId)!
        const crm = job("m1", "crm")
        yield* outbox.completeMany("w", [
          // As the dispatcher sends it (what its claim read), and bare (the store reads the job back).
          {
            _tag: "Delivered",
            jobId: crm.id,
            at: T0 + 100,
            sourceId: "web",
            destinationId: "crm",
            createdAt: crm.createdAt
          },
          { _tag: "Delivered", jobId: job("m2", "crm").id, at: T0 + 300 },
          { _tag: "Delivered", jobId: job("m1", "webhooks").id, at: T0 + 50, endpointState: [] },
          { _tag: "Dead", jobId: job("m1", "warehouse").id, at: T0 + second, lastError: "HTTP 400" }
        ])
        const day = (destinationId?: string) =>
          Effect.map(usage.usage("web", T0 + second, 1, destinationId), ([today]) => [
            today!.messages,
            today!.delivered,
            today!.dead,
            today!.averageLatencyMs
          ])
        assert.deepStrictEqual(yield* day(), [2, 3, 1, 150])
        assert.deepStrictEqual(yield* day("crm"), [2, 2, 0, 200])
        assert.deepStrictEqual(yield* day("webhooks"), [2, 1, 0, 50])
        assert.deepStrictEqual(yield* day("warehouse"), [2, 0, 1, null])
        assert.deepStrictEqual(yield* day("nowhere"), [2, 0, 0, null])
      })
    )

    test(
      "a message is one row until claimed; its other jobs, drawn at ingest, are made by the claim and read alike before",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const log = yield* MessageLog
        const result = yield* outbox.enqueue("web", [fanOut("m1", ["webhooks", "crm", "warehouse"])], T0)
        const [first, crm, warehouse] = result.jobIds
        assert.strictEqual((yield* outbox.backlog()).pending, 3)
        const before = yield* log.jobsForMessage("m1")
        assert.deepStrictEqual(before.map((job) => [job.id, job.destinationId, job.status]), [
          [first, "webhooks", "pending"],
          [crm, "crm", "pending"],
          [warehouse, "warehouse", "pending"]
        ])
        const notMade = yield* log.getJob(warehouse!)
        assert.deepStrictEqual(
          Option.map(notMade, (job) => [job.destinationId, job.status, job.attemptCount]),
          Option.some<ReadonlyArray<string | number>>(["warehouse", "pending", 0])
        )
        const page = yield* log.listMessages({ limit: 10 })
        assert.deepStrictEqual(page.messages[0]!.destinations.map((d) => [d.jobId, d.status]), [
          [first, "pending"],
          [crm, "pending"],
          [warehouse, "pending"]
        ])

        // With room for one job the claim takes the row; the jobs it made are the next claim's, ids unchanged.
        const one = yield* outbox.claimDue("w", T0, 1, second)
        assert.deepStrictEqual(one.map((job) => job.id), [first])
        assert.strictEqual((yield* outbox.backlog()).pending, 2)
        const rest = yield* outbox.claimDue("w", T0, 10, second)
        assert.deepStrictEqual(rest.map((job) => [job.id, job.destinationId]).sort(), [[crm, "crm"], [
          warehouse,
          "warehouse"
        ]])
        for (const job of rest) assert.strictEqual(text(job.body), text(entry("m1").body!))
        assert.deepStrictEqual((yield* log.jobsForMessage("m1")).map((job) => job.status), [
          "delivering",
          "delivering",
          "delivering"
        ])
      })
    )

    test(
      "deleting a destination before the claim dead-letters only its jobs, made ones and carried ones",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const sources = yield* Sources
        yield* sources.upsertSource({
          ...source("web", "wk-web"),
          destinations: ["crm", "warehouse"].map((id) => ({
            id,
            enabled: true,
            endpoints: [{ url: `https://${id}.example.com/hook` }]
          }))
        }, T0)
        yield* outbox.enqueue("web", [
          fanOut("m1", ["webhooks", "crm", "warehouse"]),
          fanOut("m2", ["crm", "webhooks"])
        ], T0)
        const dead = yield* sources.deleteDestination("web", "crm", T0 + 1, "destination deleted")
        assert.deepStrictEqual(
          Option.map(dead, (jobs) => jobs.map((job) => job.messageId).sort()),
          Option.some(["m1", "m2"])
        )
        const jobs = yield* outbox.claimDue("w", T0 + 2, 10, second)
        assert.deepStrictEqual(jobs.map((job) => `${job.messageId}>${job.destinationId}`).sort(), [
          "m1>warehouse",
          "m1>webhooks",
          "m2>webhooks"
        ])
        for (const job of jobs) assert.strictEqual(text(job.body), text(entry(job.messageId).body!))
      })
    )
  })
}
