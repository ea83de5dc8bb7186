import { assert, describe, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect, Option } from "effect"
import type { SourceConfig } from "../../src/domain/Settings.js"
import type { ClaimedJob, EnqueueEntry } from "../../src/store/index.js"
import { dedupeWindowMs, purgeExpired, Store, StoreError, WriteKeyConflict } from "../../src/store/index.js"

/**
 * The store's behaviour, written once and run against every implementation. `fresh` must build
 * a new, empty store each time it is provided (every test provides it once), so tests share no
 * rows. Times are fixed epoch milliseconds: the store never reads a clock.
 */

export const T0 = 1_763_700_000_000 // 2025-11-21T04:40:00Z
const second = 1000
const hour = 60 * 60 * second

const encoder = new TextEncoder()
const decoder = new TextDecoder()
export const body = (text: string): Uint8Array => encoder.encode(text)
const text = (bytes: Uint8Array): string => decoder.decode(bytes)

export const source = (id: string, writeKey: string, url = "https://example.com/hook"): SourceConfig => ({
  id,
  writeKey,
  webhooks: {
    enabled: true,
    sharedSecret: "s3cret",
    endpoints: [{ url, headers: { "X-Team": "a" } }]
  }
})

export const entry = (messageId: string, userId?: string): EnqueueEntry => ({
  messageId,
  userId,
  body: body(JSON.stringify({ messageId, type: "track", event: "Clicked" }))
})

const ids = (jobs: ReadonlyArray<ClaimedJob>) => jobs.map((job) => job.id)

export interface SuiteOptions {
  /** PostgreSQL: several live processes share the database, so no lease is abandoned at start. */
  readonly shared: boolean
}

export const storeSuite = (fresh: () => Layer.Layer<Store, unknown>, options: SuiteOptions) => {
  const test = <A, E>(name: string, body: Effect.Effect<A, E, Store>) =>
    it.live(name, () => Effect.provide(body, fresh()))

  describe("sources", () => {
    test(
      "upsert, get, list, delete",
      Effect.gen(function*() {
        const store = yield* Store
        const created = yield* store.upsertSource(source("web", "wk-web"), T0)
        assert.deepStrictEqual(created, { ...source("web", "wk-web"), createdAt: T0, updatedAt: T0 })
        yield* store.upsertSource({ id: "app", writeKey: "wk-app" }, T0)

        const updated = yield* store.upsertSource(source("web", "wk-web-2", "https://example.org/x?y=1"), T0 + 5)
        assert.strictEqual(updated.createdAt, T0)
        assert.strictEqual(updated.updatedAt, T0 + 5)
        assert.strictEqual(updated.writeKey, "wk-web-2")
        assert.strictEqual(updated.webhooks?.endpoints[0]?.url, "https://example.org/x?y=1")

        const got = yield* store.getSource("web")
        assert.deepStrictEqual(got, Option.some(updated))
        assert.isTrue(Option.isNone(yield* store.getSource("nope")))

        const app = Option.getOrThrow(yield* store.getSource("app"))
        assert.isUndefined(app.webhooks)
        assert.isFalse("webhooks" in app)

        const listed = yield* store.listSources()
        assert.deepStrictEqual(listed.map((s) => s.id), ["app", "web"])

        assert.isTrue(yield* store.deleteSource("web"))
        assert.isFalse(yield* store.deleteSource("web"))
        assert.deepStrictEqual((yield* store.listSources()).map((s) => s.id), ["app"])
        // The old key no longer finds anything.
        assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey("wk-web-2")))
      })
    )

    test(
      "write key lookup finds the right key only",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.upsertSource(source("web", "wk-web"), T0)
        yield* store.upsertSource(source("app", "wk-app"), T0)
        const found = yield* store.findSourceByWriteKey("wk-web")
        assert.strictEqual(Option.getOrThrow(found).id, "web")
        assert.strictEqual(Option.getOrThrow(yield* store.findSourceByWriteKey("wk-app")).id, "app")
        for (const wrong of ["wk-we", "wk-web ", "WK-WEB", "", "wk-webx"]) {
          assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey(wrong)), wrong)
        }
        // Changing the key retires the old one.
        yield* store.upsertSource(source("web", "wk-new"), T0 + 1)
        assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey("wk-web")))
        assert.strictEqual(Option.getOrThrow(yield* store.findSourceByWriteKey("wk-new")).id, "web")
      })
    )

    test(
      "a write key belongs to one source",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.upsertSource(source("web", "wk-shared"), T0)
        const error = yield* Effect.flip(store.upsertSource(source("app", "wk-shared"), T0))
        assert.instanceOf(error, WriteKeyConflict)
        assert.deepStrictEqual(
          { sourceId: error.sourceId, conflicting: (error as WriteKeyConflict).conflictingSourceId },
          { sourceId: "app", conflicting: "web" }
        )
        assert.isTrue(Option.isNone(yield* store.getSource("app")))
        // Re-saving the owner with its own key is fine.
        yield* store.upsertSource(source("web", "wk-shared"), T0 + 1)
      })
    )
  })

  describe("enqueue", () => {
    test(
      "accepts, dedupes within the request, creates jobs only for bodies",
      Effect.gen(function*() {
        const store = yield* Store
        const result = yield* store.enqueue("web", [
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

        const jobs = yield* store.claimDue("w", T0, 10, 30 * second)
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
        const store = yield* Store
        assert.strictEqual((yield* store.enqueue("web", [entry("m1")], T0)).jobsCreated, 1)

        const again = yield* store.enqueue("web", [entry("m1"), entry("m2")], T0 + 23 * hour)
        assert.deepStrictEqual(
          { accepted: again.accepted, duplicates: again.duplicates, jobs: again.jobsCreated },
          { accepted: 1, duplicates: 1, jobs: 1 }
        )
        assert.deepStrictEqual(again.duplicateMessageIds, ["m1"])

        // Another source may use the same message id.
        assert.strictEqual((yield* store.enqueue("app", [entry("m1")], T0 + 23 * hour)).duplicates, 0)

        // 25 h after it was first seen the id is new again (and seen from then on).
        const later = yield* store.enqueue("web", [entry("m1")], T0 + 25 * hour)
        assert.deepStrictEqual({ accepted: later.accepted, duplicates: later.duplicates }, {
          accepted: 1,
          duplicates: 0
        })
        assert.strictEqual((yield* store.enqueue("web", [entry("m1")], T0 + 26 * hour)).duplicates, 1)
        // Exactly at the window's end it counts as unseen.
        assert.strictEqual((yield* store.enqueue("web", [entry("m2")], T0 + 23 * hour + dedupeWindowMs)).accepted, 1)

        const jobs = yield* store.claimDue("w", T0 + 48 * hour, 100, second)
        const describe = jobs.map((job) => `${job.sourceId}/${job.messageId}@${(job.nextDueAt - T0) / hour}h`)
        assert.deepStrictEqual(describe.sort(), ["app/m1@23h", "web/m1@0h", "web/m1@25h", "web/m2@23h", "web/m2@47h"])
      })
    )

    test(
      "a failed enqueue leaves nothing behind",
      Effect.gen(function*() {
        const store = yield* Store
        // A NULL body violates NOT NULL after the seen rows were written: all of it rolls back.
        const broken = [entry("m1"), { messageId: "m2", body: null as unknown as Uint8Array }]
        const error = yield* Effect.flip(store.enqueue("web", broken, T0))
        assert.instanceOf(error, StoreError)
        assert.strictEqual(error.operation, "enqueue")
        const retried = yield* store.enqueue("web", [entry("m1"), entry("m2")], T0 + second)
        assert.deepStrictEqual({ accepted: retried.accepted, duplicates: retried.duplicates }, {
          accepted: 2,
          duplicates: 0
        })
        assert.strictEqual((yield* store.backlog()).pending, 2)
      })
    )

    test(
      "large requests are split under the parameter limits",
      Effect.gen(function*() {
        const store = yield* Store
        const entries = Array.from({ length: 2500 }, (_, i) => entry(`m${i}`, `u${i % 7}`))
        const result = yield* store.enqueue("web", entries, T0)
        assert.strictEqual(result.jobsCreated, 2500)
        assert.strictEqual(new Set(result.jobIds).size, 2500)
        const again = yield* store.enqueue("web", entries, T0 + 1)
        assert.strictEqual(again.duplicates, 2500)
        assert.strictEqual((yield* store.backlog()).pending, 2500)
      })
    )

    test(
      "insertJobs adds jobs without deduplication",
      Effect.gen(function*() {
        const store = yield* Store
        const jobIds = yield* store.insertJobs([
          { sourceId: "web", messageId: "del-1", userId: "u1", kind: "delete", body: body("{}") },
          { sourceId: "web", messageId: "del-1", userId: "u1", kind: "delete", body: body("{}") }
        ], T0)
        assert.strictEqual(jobIds.length, 2)
        const jobs = yield* store.claimDue("w", T0, 10, second)
        assert.deepStrictEqual(jobs.map((job) => job.kind), ["delete", "delete"])
      })
    )
  })

  describe("claiming", () => {
    test(
      "claims only due jobs, up to the limit, in due order",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("a")], T0)
        yield* store.enqueue("web", [entry("b"), entry("c")], T0 + 10)
        yield* store.enqueue("web", [entry("d")], T0 + 20)

        assert.deepStrictEqual(yield* store.claimDue("w", T0 - 1, 10, second), [])
        const first = yield* store.claimDue("w", T0 + 10, 2, second)
        assert.deepStrictEqual(first.map((job) => job.messageId), ["a", first[1]!.messageId])
        assert.include(["b", "c"], first[1]!.messageId)
        const second_ = yield* store.claimDue("w", T0 + 10, 10, second)
        assert.strictEqual(second_.length, 1)
        assert.deepStrictEqual(yield* store.claimDue("w", T0 + 19, 10, second), [])
        assert.deepStrictEqual((yield* store.claimDue("w", T0 + 20, 10, second)).map((job) => job.messageId), ["d"])
        assert.deepStrictEqual(yield* store.claimDue("w", T0 + 20, 10, second), [])
        assert.deepStrictEqual(yield* store.claimDue("w", T0 + 20, 0, second), [])
      })
    )

    test(
      "concurrent claimers never get the same job",
      Effect.gen(function*() {
        const store = yield* Store
        const total = 300
        for (let i = 0; i < total; i += 100) {
          yield* store.enqueue(
            "web",
            Array.from({ length: 100 }, (_, j) => entry(`m${i + j}`)),
            T0 + i
          )
        }
        const claimer = (owner: string) =>
          Effect.gen(function*() {
            const mine: Array<string> = []
            while (true) {
              const jobs = yield* store.claimDue(owner, T0 + hour, 7, 60 * second)
              if (jobs.length === 0) return mine
              for (const job of jobs) mine.push(job.id)
              yield* Effect.yieldNow()
            }
          })
        const results = yield* Effect.all(
          ["w1", "w2", "w3", "w4", "w5", "w6"].map(claimer),
          { concurrency: "unbounded" }
        )
        const all = results.flat()
        assert.strictEqual(all.length, total)
        assert.strictEqual(new Set(all).size, total)
        const backlog = yield* store.backlog()
        assert.deepStrictEqual(backlog, { pending: 0, delivering: total, delivered: 0, dead: 0 })
      })
    )

    test(
      "an expired lease is taken over; the old owner's completion is refused",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1")], T0)
        const [job] = yield* store.claimDue("old", T0, 10, 30 * second)
        assert.isDefined(job)
        yield* store.markFirstAttempt(job!.id, T0 + 1)

        // Still leased: nobody else gets it.
        assert.deepStrictEqual(yield* store.claimDue("new", T0 + 29 * second, 10, 30 * second), [])
        const taken = yield* store.claimDue("new", T0 + 30 * second, 10, 30 * second)
        assert.deepStrictEqual(ids(taken), [job!.id])
        // The retry window survives the takeover.
        assert.strictEqual(taken[0]!.firstAttemptAt, T0 + 1)
        assert.strictEqual(taken[0]!.leaseExpiresAt, T0 + 60 * second)

        assert.isFalse(yield* store.markDelivered("old", job!.id, T0 + 31 * second))
        assert.isFalse(yield* store.reschedule("old", job!.id, T0 + hour, T0 + 1, { a: 1 }, "boom"))
        assert.isFalse(yield* store.markDead("old", job!.id, T0 + 31 * second, "boom"))
        assert.deepStrictEqual(yield* store.renewLeases("old", [job!.id], T0 + hour), [])
        assert.strictEqual(yield* store.releaseLeases("old"), 0)
        assert.strictEqual(Option.getOrThrow(yield* store.getJob(job!.id)).leaseOwner, "new")

        assert.isTrue(yield* store.markDelivered("new", job!.id, T0 + 32 * second))
        const done = Option.getOrThrow(yield* store.getJob(job!.id))
        assert.deepStrictEqual(
          { status: done.status, finishedAt: done.finishedAt, leaseOwner: done.leaseOwner },
          { status: "delivered", finishedAt: T0 + 32 * second, leaseOwner: null }
        )
        // Completing twice is refused too: the job is no longer delivering.
        assert.isFalse(yield* store.markDelivered("new", job!.id, T0 + 33 * second))
      })
    )

    test(
      "claims can leave some sources' jobs for later",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("w1"), entry("w2")], T0)
        yield* store.enqueue("app", [entry("a1")], T0 + 1)
        yield* store.enqueue("cli", [entry("c1")], T0 + 2)
        const first = yield* store.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web", "cli"] })
        assert.deepStrictEqual(first.map((job) => job.messageId), ["a1"])
        const rest = yield* store.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: [] })
        assert.deepStrictEqual(rest.map((job) => job.messageId).sort(), ["c1", "w1", "w2"])
        // Expired leases obey the exclusion too.
        const taken = yield* store.claimDue("x", T0 + 10 + second, 10, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(taken.map((job) => job.messageId).sort(), ["a1", "c1"])
      })
    )

    test(
      "a claim that leaves a source out takes the earliest due jobs of all the others, in due order",
      Effect.gen(function*() {
        const store = yield* Store
        // The left-out source's due jobs come first in due order, as a full mailbox's backlog does.
        yield* store.enqueue("web", Array.from({ length: 50 }, (_, i) => entry(`w${i}`)), T0)
        yield* store.enqueue("cli", [entry("c1"), entry("c2")], T0 + 1)
        yield* store.enqueue("app", [entry("a1"), entry("a2"), entry("a3")], T0 + 3)
        yield* store.enqueue("cli", [entry("c3")], T0 + 5)
        yield* store.enqueue("app", [entry("a4")], T0 + 100)
        const first = yield* store.claimDue("w", T0 + 10, 4, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(first.map((job) => job.messageId), ["c1", "c2", "a1", "a2"])
        // a4 is not due yet.
        const second_ = yield* store.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web"] })
        assert.deepStrictEqual(second_.map((job) => job.messageId), ["a3", "c3"])
        assert.deepStrictEqual(yield* store.claimDue("w", T0 + 10, 10, second, { excludeSourceIds: ["web"] }), [])
        const web = yield* store.claimDue("w", T0 + 10, 100, second, { excludeSourceIds: ["app"] })
        assert.deepStrictEqual(web.map((job) => job.messageId), Array.from({ length: 50 }, (_, i) => `w${i}`))
      })
    )

    test(
      options.shared
        ? "leases are not recovered at start on a shared database"
        : "at start, jobs a dead process left delivering go back to pending",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        yield* store.claimDue("dead-process", T0, 2, hour)
        const recovered = yield* store.recoverAbandonedLeases()
        if (options.shared) {
          assert.strictEqual(recovered, 0)
          assert.strictEqual((yield* store.backlog()).delivering, 2)
          return
        }
        assert.strictEqual(recovered, 2)
        assert.deepStrictEqual(yield* store.backlog(), { pending: 3, delivering: 0, delivered: 0, dead: 0 })
        assert.strictEqual((yield* store.claimDue("new", T0 + 1, 10, hour)).length, 3)
      })
    )

    test(
      "renewing a lease keeps the job from being taken over",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1"), entry("m2")], T0)
        const jobs = yield* store.claimDue("a", T0, 10, 10 * second)
        const renewed = yield* store.renewLeases("a", [...ids(jobs), "unknown"], T0 + 60 * second)
        assert.deepStrictEqual([...renewed].sort(), ids(jobs).sort())
        assert.deepStrictEqual(yield* store.claimDue("b", T0 + 30 * second, 10, second), [])
        assert.strictEqual((yield* store.claimDue("b", T0 + 60 * second, 10, second)).length, 2)
        assert.deepStrictEqual(yield* store.nextWakeAt(), Option.some(T0 + 61 * second))
      })
    )

    test(
      "releasing leases on shutdown makes the jobs claimable again, window kept",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        const jobs = yield* store.claimDue("a", T0, 10, 60 * second)
        yield* store.markFirstAttempt(jobs[0]!.id, T0 + 5)
        yield* store.enqueue("web", [entry("m4")], T0)
        yield* store.claimDue("b", T0, 10, 60 * second)

        assert.strictEqual(yield* store.releaseLeases("a", [jobs[2]!.id]), 1)
        assert.strictEqual(yield* store.releaseLeases("a"), 2)
        assert.deepStrictEqual(yield* store.backlog(), { pending: 3, delivering: 1, delivered: 0, dead: 0 })
        const again = yield* store.claimDue("c", T0 + 1, 10, 60 * second)
        assert.deepStrictEqual(ids(again).sort(), ids(jobs).sort())
        assert.strictEqual(again.find((job) => job.id === jobs[0]!.id)!.firstAttemptAt, T0 + 5)
      })
    )
  })

  describe("completions", () => {
    test(
      "reschedule, then dead; delivered; the batched form refuses what it does not hold",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1"), entry("m2"), entry("m3"), entry("m4")], T0)
        const jobs = yield* store.claimDue("w", T0, 10, 60 * second)
        const byMessage = new Map(jobs.map((job) => [job.messageId, job.id]))
        const m1 = byMessage.get("m1")!

        const state = { urls: { "https://example.com/hook": { attempts: 1 } }, retired: [] }
        assert.isTrue(yield* store.reschedule("w", m1, T0 + 10 * second, T0 + 1, state, "HTTP 503"))
        const rescheduled = Option.getOrThrow(yield* store.getJob(m1))
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
        assert.deepStrictEqual(yield* store.claimDue("w", T0 + 9 * second, 10, 60 * second), [])
        const [back] = yield* store.claimDue("w", T0 + 10 * second, 10, 60 * second)
        assert.strictEqual(back!.id, m1)
        assert.deepStrictEqual(back!.endpointState, state)
        assert.strictEqual(back!.firstAttemptAt, T0 + 1)

        // A later reschedule never moves the window's start.
        assert.isTrue(yield* store.reschedule("w", m1, T0 + 20 * second, T0 + 999, { n: 2 }, null))
        const [again] = yield* store.claimDue("w", T0 + 20 * second, 10, 60 * second)
        assert.strictEqual(again!.firstAttemptAt, T0 + 1)
        assert.deepStrictEqual(again!.endpointState, { n: 2 })
        assert.isTrue(yield* store.markDead("w", m1, T0 + 21 * second, "all URLs failed"))
        const dead = Option.getOrThrow(yield* store.getJob(m1))
        assert.deepStrictEqual(
          { status: dead.status, finishedAt: dead.finishedAt, lastError: dead.lastError },
          { status: "dead", finishedAt: T0 + 21 * second, lastError: "all URLs failed" }
        )

        const result = yield* store.completeMany("w", [
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
        assert.strictEqual(Option.getOrThrow(yield* store.getJob(m1)).status, "dead")
        const delivered = Option.getOrThrow(yield* store.getJob(byMessage.get("m2")!))
        assert.deepStrictEqual(
          { status: delivered.status, firstAttemptAt: delivered.firstAttemptAt },
          { status: "delivered", firstAttemptAt: T0 + 2 }
        )
        assert.deepStrictEqual(yield* store.backlog(), { pending: 1, delivering: 0, delivered: 1, dead: 2 })
        assert.deepStrictEqual(yield* store.nextWakeAt(), Option.some(T0 + 40 * second))
        assert.deepStrictEqual(yield* store.completeMany("w", []), { applied: [], refused: [] })
      })
    )

    test(
      "attempts are recorded and returned with jobsForMessage",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1", "u1")], T0)
        yield* store.enqueue("app", [entry("m1")], T0)
        const jobs = yield* store.claimDue("w", T0, 10, 60 * second)
        const web = jobs.find((job) => job.sourceId === "web")!
        const app = jobs.find((job) => job.sourceId === "app")!

        assert.isTrue(yield* store.markFirstAttempt(web.id, T0 + 1))
        assert.isFalse(yield* store.markFirstAttempt(web.id, T0 + 2))
        const long = "é".repeat(600) // 1 200 bytes
        yield* store.recordAttempts([
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
        const completed = yield* store.completeMany("w", [{ _tag: "Delivered", jobId: web.id, at: T0 + 3000 }], [
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

        const found = yield* store.jobsForMessage("m1")
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
        const refused = yield* store.completeMany("not-the-owner", [{ _tag: "Delivered", jobId: app.id, at: T0 + 5 }], [
          { jobId: app.id, url: "https://c.example", attempt: 1, startedAt: T0 + 4, durationMs: 1, outcome: "success" }
        ])
        assert.deepStrictEqual(refused, { applied: [], refused: [app.id] })
        const appAfter = (yield* store.jobsForMessage("m1")).find((job) => job.id === app.id)!
        assert.deepStrictEqual(
          { status: appAfter.status, count: appAfter.attemptCount, attempts: appAfter.attempts.length },
          { status: "delivering", count: 1, attempts: 1 }
        )
        assert.deepStrictEqual(yield* store.jobsForMessage("nope"), [])
      })
    )
  })

  describe("dead letters", () => {
    test(
      "are listed newest first, by source, and replayed with a fresh window",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("w1"), entry("w2"), entry("w3")], T0)
        yield* store.enqueue("app", [entry("a1")], T0)
        const jobs = yield* store.claimDue("w", T0, 10, 60 * second)
        const id = (messageId: string) => jobs.find((job) => job.messageId === messageId)!.id
        yield* store.completeMany("w", [
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
        yield* store.recordAttempts([
          { jobId: id("w1"), url: "https://a.example", attempt: 1, startedAt: T0, durationMs: 3, outcome: "permanent" }
        ])

        const all = yield* store.listDeadLetters({ limit: 10 })
        assert.deepStrictEqual(all.map((job) => job.messageId), ["w2", "a1", "w1"])
        assert.deepStrictEqual((yield* store.listDeadLetters({ limit: 1 })).map((job) => job.messageId), ["w2"])
        const web = yield* store.listDeadLetters({ sourceId: "web", limit: 10 })
        assert.deepStrictEqual(web.map((job) => [job.messageId, job.lastError]), [["w2", "410"], ["w1", "404"]])
        assert.deepStrictEqual(
          (yield* store.listDeadLetters({ limit: 10, before: T0 + 3000 })).map((job) => job.messageId),
          ["a1", "w1"]
        )

        assert.isFalse(yield* store.replayDeadLetter(id("w3"), T0 + hour))
        assert.isFalse(yield* store.replayDeadLetter("unknown", T0 + hour))
        assert.isTrue(yield* store.replayDeadLetter(id("w1"), T0 + 5 * hour))
        assert.isFalse(yield* store.replayDeadLetter(id("w1"), T0 + 5 * hour))
        const replayed = Option.getOrThrow(yield* store.getJob(id("w1")))
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
        assert.deepStrictEqual((yield* store.listDeadLetters({ limit: 10 })).map((job) => job.messageId), ["w2", "a1"])
        const [claimed] = yield* store.claimDue("w", T0 + 5 * hour, 10, 60 * second)
        assert.deepStrictEqual(
          { id: claimed!.id, state: claimed!.endpointState, first: claimed!.firstAttemptAt },
          { id: id("w1"), state: null, first: null }
        )
        assert.strictEqual(text(claimed!.body), JSON.stringify({ messageId: "w1", type: "track", event: "Clicked" }))
        // History stays with the job.
        assert.strictEqual((yield* store.jobsForMessage("w1"))[0]!.attempts.length, 1)
      })
    )
  })

  describe("retention and usage", () => {
    test(
      "purges delivered jobs and their attempts past retention, keeps the rest",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("old"), entry("new"), entry("dead"), entry("pending")], T0)
        const jobs = yield* store.claimDue("w", T0, 3, 60 * second)
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
        yield* store.completeMany("w", [
          { _tag: "Delivered", jobId: oldId!, at: T0 + 1000 },
          { _tag: "Delivered", jobId: newId!, at: T0 + 3 * 24 * hour },
          { _tag: "Dead", jobId: deadId!, at: T0 + 1000, lastError: "404" }
        ], [attempt(oldId!), attempt(newId!), attempt(deadId!)])

        const now = T0 + 8 * 24 * hour
        const purged = yield* purgeExpired(now, "7 days")
        assert.deepStrictEqual(purged, { delivered: 1, seen: 4 })
        assert.deepStrictEqual(yield* store.jobsForMessage("old"), [])
        assert.strictEqual((yield* store.jobsForMessage("new"))[0]!.attempts.length, 1)
        assert.strictEqual((yield* store.jobsForMessage("dead"))[0]!.attempts.length, 1)
        assert.deepStrictEqual(yield* store.backlog(), { pending: 1, delivering: 0, delivered: 1, dead: 1 })
        // Forgotten ids are new again.
        assert.strictEqual((yield* store.enqueue("web", [entry("old")], now)).accepted, 1)

        // Dead letters go only by explicit purge.
        assert.strictEqual(yield* store.purgeDeadLetters({ olderThan: now, sourceId: "app" }), 0)
        assert.strictEqual(yield* store.purgeDeadLetters({ olderThan: now }), 1)
        assert.deepStrictEqual(yield* store.jobsForMessage("dead"), [])
        assert.strictEqual(yield* store.purgeDelivered(now - 7 * 24 * hour), 0)
      })
    )

    test(
      "purges in chunks",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", Array.from({ length: 2300 }, (_, i) => entry(`m${i}`)), T0)
        const jobs = yield* store.claimDue("w", T0, 3000, 60 * second)
        yield* store.completeMany("w", jobs.map((job) => ({ _tag: "Delivered" as const, jobId: job.id, at: T0 })))
        assert.strictEqual(yield* store.purgeDelivered(T0 + 1), 2300)
        assert.strictEqual(yield* store.purgeSeen(T0 + 1), 2300)
        assert.deepStrictEqual(yield* store.backlog(), { pending: 0, delivering: 0, delivered: 0, dead: 0 })
      })
    )

    test(
      "counts usage per source and UTC day",
      Effect.gen(function*() {
        const store = yield* Store
        const day = 24 * hour
        const midnight = Math.floor(T0 / day) * day
        yield* store.enqueue("web", [entry("m1"), entry("m2"), { messageId: "f1", filtered: true }, entry("m1")], T0)
        yield* store.enqueue("web", [entry("m1")], T0 + 1)
        yield* store.addUsage("web", T0, { apiCalls: 1 })
        const jobs = yield* store.claimDue("w", T0, 10, hour)
        yield* store.completeMany("w", [
          { _tag: "Delivered", jobId: jobs[0]!.id, at: midnight + day + 5 },
          { _tag: "Dead", jobId: jobs[1]!.id, at: midnight + day + 6, lastError: "x" }
        ])
        const usage = yield* store.usage("web", midnight + day + 10, 3)
        const dayString = (ms: number) => new Date(ms).toISOString().slice(0, 10)
        const zeros = { apiCalls: 0, messages: 0, filtered: 0, delivered: 0, dead: 0, averageLatencyMs: null }
        assert.deepStrictEqual(usage, [
          { ...zeros, day: dayString(midnight - day) },
          { ...zeros, day: dayString(midnight), apiCalls: 3, messages: 3, filtered: 1 },
          // The delivered job was received at T0: its latency is the whole wait; the dead one has none.
          { ...zeros, day: dayString(midnight + day), delivered: 1, dead: 1, averageLatencyMs: midnight + day + 5 - T0 }
        ])
        assert.deepStrictEqual((yield* store.usage("app", T0, 1)).map((u) => u.messages), [0])
      })
    )

    test(
      "counts a delivery from the source and creation time its claim gave as from the job itself",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.enqueue("web", [entry("m1"), entry("m2"), entry("m3")], T0)
        const [first, second, third] = yield* store.claimDue("w", T0 + 10, 10, hour)
        const fromClaim = (job: ClaimedJob, at: number) =>
          ({ _tag: "Delivered", jobId: job.id, at, sourceId: job.sourceId, createdAt: job.createdAt }) as const
        const result = yield* store.completeMany("w", [
          fromClaim(first!, T0 + 100),
          { _tag: "Delivered", jobId: second!.id, at: T0 + 300 }
        ])
        assert.deepStrictEqual([...result.applied].sort(), [first!.id, second!.id].sort())
        // A lease this owner does not hold: refused, not counted, whatever the caller says of the job.
        const refused = yield* store.completeMany("other", [fromClaim(third!, T0 + 500)])
        assert.deepStrictEqual(refused.refused, [third!.id])
        const [today] = yield* store.usage("web", T0, 1)
        assert.strictEqual(today!.delivered, 2)
        assert.strictEqual(today!.averageLatencyMs, (100 + 300) / 2)
      })
    )
  })
}

/** Builds the store, writes through it, closes it; then `reopen` must see the same data. */
export const survivesReopen = (open: Layer.Layer<Store, unknown>) =>
  Effect.gen(function*() {
    yield* Effect.gen(function*() {
      const store = yield* Store
      yield* store.upsertSource(source("web", "wk-web"), T0)
      yield* store.enqueue("web", [entry("m1"), entry("m2")], T0)
      const [job] = yield* store.claimDue("w", T0, 1, 60 * second)
      yield* store.reschedule("w", job!.id, T0 + 5, T0 + 1, { n: 1 }, "503")
    }).pipe(Effect.provide(open))

    yield* Effect.gen(function*() {
      const store = yield* Store
      assert.strictEqual(Option.getOrThrow(yield* store.findSourceByWriteKey("wk-web")).id, "web")
      assert.strictEqual((yield* store.enqueue("web", [entry("m1")], T0 + 10)).duplicates, 1)
      const jobs = yield* store.claimDue("w2", T0 + 10, 10, 60 * second)
      assert.deepStrictEqual(jobs.map((job) => job.messageId).sort(), ["m1", "m2"])
      const m1 = jobs.find((job) => job.firstAttemptAt !== null)!
      assert.deepStrictEqual({ first: m1.firstAttemptAt, state: m1.endpointState }, { first: T0 + 1, state: { n: 1 } })
    }).pipe(Effect.provide(open))
  })
