import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { AudienceMembers } from "../../src/store/AudienceMembers.js"
import { DeletionRequests } from "../../src/store/DeletionRequests.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { TraitValues } from "../../src/store/TraitValues.js"
import { body, entry, type FreshStore, second, storeTest, T0 } from "./storeFixtures.js"

/** The store's side of deletion requests (REFERENCE §5), run against every implementation like `storeSuite`. */
export const deletionStoreSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("deletion requests", () => {
    test(
      "remove the user's pending and dead jobs of the named sources with their attempts, and nothing else",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        const deletionRequests = yield* DeletionRequests
        yield* outbox.enqueue("web", [entry("p1", "u1"), entry("p2", "u1"), entry("x1", "u2"), entry("n1")], T0)
        yield* outbox.enqueue("app", [entry("a1", "u1")], T0)
        // u1's dead and delivering jobs of "web", and a delivered one.
        yield* outbox.enqueue("web", [entry("d1", "u1"), entry("f1", "u1"), entry("ok", "u1")], T0 + 1)
        const claimed = yield* outbox.claimDue("w", T0 + 10, 100, 60 * second)
        const id = (messageId: string) => claimed.find((job) => job.messageId === messageId)!.id
        yield* outbox.completeMany("w", [
          { _tag: "Dead", jobId: id("d1"), at: T0 + 20, lastError: "410" },
          { _tag: "Delivered", jobId: id("ok"), at: T0 + 20 }
        ], [{
          jobId: id("d1"),
          url: "https://a.example",
          attempt: 1,
          startedAt: T0 + 15,
          durationMs: 2,
          outcome: "permanent"
        }])
        // Everything not finished goes back to pending except f1, which stays in flight.
        yield* outbox.releaseLeases("w", claimed.map((job) => job.id).filter((jobId) => jobId !== id("f1")))
        // An earlier delete notification of u1 is never removed.
        const [earlier] = yield* outbox.insertJobs([
          { sourceId: "web", messageId: "del-0", userId: "u1", kind: "delete", body: body("{}") }
        ], T0 + 30)

        const recorded = yield* deletionRequests.recordDeletion({
          id: "del-1",
          userId: "u1",
          sourceIds: ["web"],
          everySource: false,
          notifications: ["webhooks", "crm"].map((destinationId) => ({
            sourceId: "web",
            destinationId,
            messageId: "del-1",
            body: body("{\"type\":\"delete\"}")
          }))
        }, T0 + 100)
        assert.strictEqual(recorded.jobsRemoved, 3)
        assert.deepStrictEqual(
          recorded.notifications.map((n) => [n.sourceId, n.destinationId]),
          [["web", "webhooks"], ["web", "crm"]]
        )

        for (const gone of ["p1", "p2", "d1"]) assert.deepStrictEqual(yield* messageLog.jobsForMessage(gone), [], gone)
        const status = (messageId: string) =>
          Effect.map(messageLog.jobsForMessage(messageId), (jobs) => jobs.map((job) => job.status))
        assert.deepStrictEqual(yield* status("f1"), ["delivering"])
        assert.deepStrictEqual(yield* status("ok"), ["delivered"])
        assert.deepStrictEqual(yield* status("x1"), ["pending"])
        assert.deepStrictEqual(yield* status("n1"), ["pending"])
        assert.deepStrictEqual(yield* status("a1"), ["pending"])
        assert.strictEqual(Option.getOrThrow(yield* messageLog.getJob(earlier!)).status, "pending")

        for (const [i, destinationId] of ["webhooks", "crm"].entries()) {
          const notification = Option.getOrThrow(yield* messageLog.getJob(recorded.notifications[i]!.jobId))
          assert.deepStrictEqual(
            [
              notification.kind,
              notification.status,
              notification.userId,
              notification.messageId,
              notification.destinationId,
              notification.nextDueAt
            ],
            ["delete", "pending", "u1", "del-1", destinationId, T0 + 100]
          )
        }

        const stored = Option.getOrThrow(yield* deletionRequests.getDeletion("del-1"))
        assert.deepStrictEqual(
          {
            ...stored,
            notifications: stored.notifications.map((n) => [n.sourceId, n.destinationId, n.jobId, Option.isSome(n.job)])
          },
          {
            id: "del-1",
            userId: "u1",
            sourceIds: ["web"],
            createdAt: T0 + 100,
            jobsRemoved: 3,
            notifications: [
              ["web", "webhooks", recorded.notifications[0]!.jobId, true],
              ["web", "crm", recorded.notifications[1]!.jobId, true]
            ]
          }
        )
        assert.isTrue(Option.isNone(yield* deletionRequests.getDeletion("nope")))
      })
    )

    test(
      "without named sources: every source's undelivered jobs of the user go; a user with no data is recorded",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const deletionRequests = yield* DeletionRequests
        yield* outbox.enqueue("web", [entry("w1", "u1")], T0)
        yield* outbox.enqueue("gone-source", [entry("g1", "u1")], T0)
        const recorded = yield* deletionRequests.recordDeletion({
          id: "del-2",
          userId: "u1",
          sourceIds: ["web"],
          everySource: true,
          notifications: []
        }, T0 + 1)
        assert.strictEqual(recorded.jobsRemoved, 2)
        const none = yield* deletionRequests.recordDeletion({
          id: "del-3",
          userId: "nobody",
          sourceIds: [],
          everySource: false,
          notifications: []
        }, T0 + 2)
        assert.deepStrictEqual(none, { jobsRemoved: 0, notifications: [] })
        assert.strictEqual(Option.getOrThrow(yield* deletionRequests.getDeletion("del-3")).userId, "nobody")
      })
    )

    test(
      "a large backlog of one user is removed in chunks within the one transaction",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const deletionRequests = yield* DeletionRequests
        const entries = Array.from({ length: 2_500 }, (_, i) => entry(`m${i}`, "heavy"))
        yield* outbox.enqueue("web", entries, T0)
        yield* outbox.enqueue("web", [entry("other", "light")], T0)
        const recorded = yield* deletionRequests.recordDeletion({
          id: "del-4",
          userId: "heavy",
          sourceIds: ["web"],
          everySource: false,
          notifications: []
        }, T0 + 1)
        assert.strictEqual(recorded.jobsRemoved, 2_500)
        assert.strictEqual((yield* outbox.backlog()).pending, 1)
      })
    )

    test(
      "forget the user's audience memberships and computed traits in the covered sources only",
      Effect.gen(function*() {
        const deletionRequests = yield* DeletionRequests
        const audienceMembers = yield* AudienceMembers
        const traitValues = yield* TraitValues
        for (const sourceId of ["web", "app"]) {
          const ref = { sourceId, audience: "VIP" }
          assert.strictEqual(
            (yield* audienceMembers.startAudienceSync(ref, "vip", "o", T0, T0 + 60 * second))._tag,
            "Started"
          )
          yield* audienceMembers.applyAudienceChunk({
            ref,
            owner: "o",
            now: T0,
            leaseUntil: T0 + 60 * second,
            change: "add",
            userIds: ["u1", "u2"]
          })
          yield* traitValues.applyTraitChunk({ sourceId, trait: "ltv", now: T0, values: [["u1", "5"], ["u2", "7"]] })
        }
        yield* deletionRequests.recordDeletion({
          id: "d",
          userId: "u1",
          sourceIds: ["web"],
          everySource: false,
          notifications: []
        }, T0)
        assert.deepStrictEqual(
          yield* audienceMembers.audienceMembersPage({ sourceId: "web", audience: "VIP" }, undefined, 10),
          [
            "u2"
          ]
        )
        assert.deepStrictEqual(
          yield* audienceMembers.audienceMembersPage({ sourceId: "app", audience: "VIP" }, undefined, 10),
          [
            "u1",
            "u2"
          ]
        )
        // u1's value in web was forgotten: the same value is new again; in app it is unchanged.
        const again = (sourceId: string) =>
          traitValues.applyTraitChunk({ sourceId, trait: "ltv", now: T0 + 1, values: [["u1", "5"]] })
        assert.strictEqual((yield* again("web")).changed, 1)
        assert.strictEqual((yield* again("app")).changed, 0)
      })
    )
  })
}
