import { assert, describe, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"
import { Attempts } from "../../src/store/Attempts.js"
import { DeletionRequests } from "../../src/store/DeletionRequests.js"
import type { EnqueueEntry } from "../../src/store/index.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { scanBudget } from "../../src/store/MessageLogListing.js"
import type { LogMessage, MessageLogQuery } from "../../src/store/MessageLogQuery.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import type { StoreServices } from "../../src/store/Store.js"
import { body, hour, T0 } from "./storeFixtures.js"

/** The operator's message log (REFERENCE §12): the listing's filters, paging, budget, retention and deletion. */

const message = (
  messageId: string,
  fields: {
    type?: string
    event?: string
    userId?: string
    anonymousId?: string
    destinationIds?: ReadonlyArray<string>
    filtered?: boolean
  } = {}
): EnqueueEntry => ({
  messageId,
  type: fields.type ?? "track",
  event: fields.event,
  userId: fields.userId,
  anonymousId: fields.anonymousId,
  filtered: fields.filtered,
  body: fields.filtered === true ? undefined : body(JSON.stringify({ messageId })),
  destinationIds: fields.filtered === true ? undefined : fields.destinationIds
})

const ids = (messages: ReadonlyArray<LogMessage>) => messages.map((m) => m.messageId)

const list = (query: Partial<MessageLogQuery>) =>
  Effect.gen(function*() {
    const log = yield* MessageLog
    return yield* log.listMessages({ limit: 100, ...query })
  })

/**
 * Two sources; `web`: t1 (track Clicked, alice, to webhooks and crm: webhooks dead with an attempt, crm delivered),
 * t2 (identify, bob, anonymous a-2, delivering after an attempt), t3 (track Viewed, anonymous a-3, pending),
 * f1 (filtered, alice); `app`: p1 (track Clicked, alice, pending). Received one second apart, in that order.
 */
const seed = Effect.gen(function*() {
  const outbox = yield* Outbox
  const attempts = yield* Attempts
  yield* outbox.enqueue("web", [
    message("t1", { event: "Clicked", userId: "alice", destinationIds: ["webhooks", "crm"] })
  ], T0)
  yield* outbox.enqueue("web", [message("t2", { type: "identify", userId: "bob", anonymousId: "a-2" })], T0 + 1000)
  const claimed = yield* outbox.claimDue("w", T0 + 1500, 10, 60_000)
  const job = (messageId: string, destinationId = "webhooks") =>
    claimed.find((j) => j.messageId === messageId && j.destinationId === destinationId)!.id
  yield* attempts.recordAttempts([
    {
      jobId: job("t1"),
      url: "https://a.example",
      attempt: 1,
      startedAt: T0 + 1500,
      durationMs: 3,
      statusCode: 410,
      outcome: "permanent"
    },
    {
      jobId: job("t2"),
      url: "https://a.example",
      attempt: 1,
      startedAt: T0 + 1500,
      durationMs: 3,
      statusCode: 503,
      outcome: "retryable"
    }
  ])
  yield* outbox.completeMany("w", [
    { _tag: "Dead", jobId: job("t1"), at: T0 + 1600, lastError: "410" },
    { _tag: "Delivered", jobId: job("t1", "crm"), at: T0 + 1600 }
  ])
  yield* outbox.enqueue("web", [message("t3", { event: "Viewed", anonymousId: "a-3" })], T0 + 2000)
  yield* outbox.enqueue("web", [message("f1", { userId: "alice", filtered: true })], T0 + 3000)
  yield* outbox.enqueue("app", [message("p1", { event: "Clicked", userId: "alice" })], T0 + 4000)
  return { deadJob: job("t1"), crmJob: job("t1", "crm") }
})

export const messageLogListingSuite = (fresh: () => Layer.Layer<StoreServices, unknown>) => {
  const test = <A, E>(name: string, self: Effect.Effect<A, E, StoreServices>, timeout?: number) =>
    it.live(name, () => Effect.provide(self, fresh()), timeout)

  describe("message log listing", () => {
    test(
      "lists every accepted message newest first, each filter alone and combined",
      Effect.gen(function*() {
        yield* seed
        // A duplicate is not logged again.
        yield* (yield* Outbox).enqueue("web", [message("t3")], T0 + 5000)
        assert.deepStrictEqual(ids((yield* list({})).messages), ["p1", "f1", "t3", "t2", "t1"])
        assert.deepStrictEqual(ids((yield* list({ sourceIds: ["web"] })).messages), ["f1", "t3", "t2", "t1"])
        assert.deepStrictEqual(ids((yield* list({ sourceIds: ["web", "app"] })).messages), [
          "p1",
          "f1",
          "t3",
          "t2",
          "t1"
        ])
        assert.deepStrictEqual(ids((yield* list({ types: ["identify"] })).messages), ["t2"])
        assert.deepStrictEqual(ids((yield* list({ events: ["Clicked", "Viewed"] })).messages), ["p1", "t3", "t1"])
        assert.deepStrictEqual(ids((yield* list({ userIds: ["alice"] })).messages), ["p1", "f1", "t1"])
        assert.deepStrictEqual(ids((yield* list({ anonymousIds: ["a-2", "a-3"] })).messages), ["t3", "t2"])
        assert.deepStrictEqual(ids((yield* list({ destinationIds: ["crm"] })).messages), ["t1"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["pending"] })).messages), ["p1", "t3"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["delivering"] })).messages), ["t2"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["delivered"] })).messages), ["t1"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["dead"] })).messages), ["t1"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["filtered"] })).messages), ["f1"])
        assert.deepStrictEqual(ids((yield* list({ statuses: ["filtered", "delivering"] })).messages), ["f1", "t2"])
        // Combined: every filter must pass; status and destination on one job.
        assert.deepStrictEqual(ids((yield* list({ sourceIds: ["web"], userIds: ["alice"] })).messages), ["f1", "t1"])
        assert.deepStrictEqual(ids((yield* list({ userIds: ["alice"], statuses: ["pending"] })).messages), ["p1"])
        assert.deepStrictEqual(ids((yield* list({ destinationIds: ["crm"], statuses: ["dead"] })).messages), [])
        assert.deepStrictEqual(ids((yield* list({ destinationIds: ["crm"], statuses: ["delivered"] })).messages), [
          "t1"
        ])
        assert.deepStrictEqual(ids((yield* list({ sourceIds: ["app"], statuses: ["dead"] })).messages), [])
        assert.deepStrictEqual(ids((yield* list({ events: ["Viewed"], statuses: ["dead"] })).messages), [])
        assert.deepStrictEqual(
          ids((yield* list({ types: ["track"], statuses: ["pending"], sourceIds: ["web"] })).messages),
          ["t3"]
        )
        assert.deepStrictEqual(ids((yield* list({ destinationIds: ["crm"], statuses: ["filtered"] })).messages), [])
      })
    )

    test(
      "shows a dead message's destinations with their attempts, and a filtered message with none",
      Effect.gen(function*() {
        const { crmJob, deadJob } = yield* seed
        const page = yield* list({ sourceIds: ["web"] })
        const t1 = page.messages.find((m) => m.messageId === "t1")!
        assert.deepStrictEqual(
          { ...t1, destinations: [...t1.destinations].sort((a, b) => a.destinationId.localeCompare(b.destinationId)) },
          {
            messageId: "t1",
            sourceId: "web",
            type: "track",
            event: "Clicked",
            userId: "alice",
            anonymousId: null,
            receivedAt: T0,
            destinations: [
              { destinationId: "crm", jobId: crmJob, status: "delivered", attempts: 0, lastAttempt: null },
              {
                destinationId: "webhooks",
                jobId: deadJob,
                status: "dead",
                attempts: 1,
                lastAttempt: { statusCode: 410, at: T0 + 1500 }
              }
            ]
          }
        )
        const f1 = page.messages.find((m) => m.messageId === "f1")!
        assert.deepStrictEqual([f1.destinations, f1.userId, f1.receivedAt], [[], "alice", T0 + 3000])
        const dead = yield* list({ statuses: ["dead"], sourceIds: ["web"] })
        assert.deepStrictEqual(dead.messages[0], t1)
        const t2 = page.messages.find((m) => m.messageId === "t2")!
        assert.deepStrictEqual(t2.destinations.map((d) => [d.status, d.attempts, d.lastAttempt?.statusCode]), [
          ["delivering", 1, 503]
        ])
      })
    )

    test(
      "since and until bound the receipt time",
      Effect.gen(function*() {
        yield* seed
        assert.deepStrictEqual(ids((yield* list({ since: T0 + 1000 })).messages), ["p1", "f1", "t3", "t2"])
        assert.deepStrictEqual(ids((yield* list({ until: T0 + 2000 })).messages), ["t2", "t1"])
        assert.deepStrictEqual(
          ids((yield* list({ since: T0 + 1000, until: T0 + 3000, sourceIds: ["web"] })).messages),
          [
            "t3",
            "t2"
          ]
        )
        assert.deepStrictEqual(ids((yield* list({ since: T0, until: T0 + 1, statuses: ["dead"] })).messages), ["t1"])
        assert.deepStrictEqual(ids((yield* list({ since: T0 + 1, statuses: ["dead"] })).messages), [])
      })
    )

    test(
      "pages through a thousand messages once each while new ones keep arriving",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        for (let b = 0; b < 10; b++) {
          yield* outbox.enqueue(
            "web",
            Array.from({ length: 100 }, (_, i) => message(`m-${b * 100 + i}`, { userId: `u-${i % 7}` })),
            T0 + b * 1000
          )
        }
        // Some of them dead, to page the dead letters' walk as well.
        const claimed = yield* outbox.claimDue("w", T0 + 20_000, 1000, 60_000)
        yield* outbox.completeMany(
          "w",
          claimed.filter((_, i) => i % 3 === 0).map((job) => ({
            _tag: "Dead",
            jobId: job.id,
            at: T0 + 20_000,
            lastError: "x"
          }))
        )
        const walk = (query: Partial<MessageLogQuery>) =>
          Effect.gen(function*() {
            const seen: Array<string> = []
            let after: string | undefined
            let arriving = 0
            for (let pages = 0; pages < 100; pages++) {
              const page = yield* list({ ...query, limit: 50, after })
              seen.push(...ids(page.messages))
              yield* outbox.enqueue(
                "web",
                [message(`new-${query.statuses?.[0] ?? "all"}-${arriving++}`)],
                T0 + 30_000 + arriving
              )
              if (page.next === null) break
              after = page.next
            }
            return seen
          })
        const all = yield* walk({ sourceIds: ["web"] })
        assert.strictEqual(all.length, 1000)
        assert.strictEqual(new Set(all).size, 1000)
        assert.deepStrictEqual(all.slice(0, 2), ["m-999", "m-998"])
        const dead = yield* walk({ statuses: ["dead"] })
        assert.strictEqual(new Set(dead).size, dead.length)
        assert.deepStrictEqual([...dead].sort(), claimed.filter((_, i) => i % 3 === 0).map((j) => j.messageId).sort())
        const anySource = yield* walk({ userIds: ["u-3"] })
        assert.strictEqual(new Set(anySource).size, anySource.length)
        assert.strictEqual(anySource.length, 10 * 14)
      }),
      60_000
    )

    test(
      "refuses a cursor it did not write, or one of the other walk",
      Effect.gen(function*() {
        yield* seed
        const log = yield* MessageLog
        for (const after of ["nonsense", Buffer.from("{\"s\":-1}").toString("base64url"), ""]) {
          const error = yield* Effect.flip(log.listMessages({ limit: 10, after }))
          assert.deepStrictEqual([error._tag, (error as { cursor?: string }).cursor], ["BadCursor", after])
        }
        const page = yield* list({ limit: 1 })
        const error = yield* Effect.flip(log.listMessages({ limit: 1, statuses: ["dead"], after: page.next! }))
        assert.strictEqual(error._tag, "BadCursor")
      })
    )

    test(
      "stops at its scan budget with a short page and where to go on",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const total = scanBudget + 5000
        yield* outbox.enqueue("web", [message("needle", { userId: "rare" })], T0)
        for (let b = 0; b * 1000 < total; b++) {
          yield* outbox.enqueue(
            "web",
            Array.from(
              { length: 1000 },
              (_, i) => message(`hay-${b}-${i}`, { userId: "common", filtered: i % 2 === 0 })
            ),
            T0 + 1000 + b
          )
        }
        const first = yield* list({ sourceIds: ["web"], userIds: ["rare"], limit: 10 })
        assert.deepStrictEqual(ids(first.messages), [])
        assert.isNotNull(first.next)
        const second = yield* list({ sourceIds: ["web"], userIds: ["rare"], limit: 10, after: first.next })
        assert.deepStrictEqual([ids(second.messages), second.next], [["needle"], null])
      }),
      60_000
    )

    test(
      "retention removes the rows of messages older than it, a deletion request the user's",
      Effect.gen(function*() {
        yield* seed
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", [message("later", { userId: "alice", anonymousId: "a-9" })], T0 + 10 * hour)
        yield* outbox.enqueue("app", [message("anon", { anonymousId: "alice" })], T0 + 10 * hour + 1)
        yield* (yield* Purge).purgeDelivered(T0 + 3000)
        assert.deepStrictEqual(ids((yield* list({})).messages), ["anon", "later", "p1", "f1"])
        yield* (yield* DeletionRequests).recordDeletion(
          { id: "d1", userId: "alice", sourceIds: ["web"], everySource: false, notifications: [] },
          T0 + 11 * hour
        )
        assert.deepStrictEqual(ids((yield* list({})).messages), ["anon", "p1"])
        yield* (yield* DeletionRequests).recordDeletion(
          { id: "d2", userId: "alice", sourceIds: [], everySource: true, notifications: [] },
          T0 + 11 * hour
        )
        assert.deepStrictEqual(ids((yield* list({})).messages), [])
      })
    )
  })
}
