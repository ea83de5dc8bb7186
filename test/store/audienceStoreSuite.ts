import { assert, describe } from "@effect/vitest"
import { Effect } from "effect"
import { AudienceMembers } from "../../src/store/AudienceMembers.js"
import type { AudienceRef, IdentifyJobBuilder } from "../../src/store/index.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { TraitValues } from "../../src/store/TraitValues.js"
import { type FreshStore, second, storeTest, T0 } from "./storeFixtures.js"

/**
 * The store's side of audience syncs and computed traits (REFERENCE §6), run against every implementation like
 * `storeSuite`; `fresh` builds a new, empty store.
 */

const decoder = new TextDecoder()

/** A builder that records what it was asked for and makes a readable body. */
const recordingBuilder = () => {
  const calls: Array<[string, unknown]> = []
  const build: IdentifyJobBuilder = (userId, value) => {
    calls.push([userId, value])
    return { messageId: `id-${userId}-${String(value)}`, bodyText: JSON.stringify({ userId, value, text: tricky }) }
  }
  return { calls, build }
}

/** Quotes, backslashes, escapes, accents, an emoji and a U+2028: the stored bytes must be exactly the UTF-8 of the text. */
const tricky = "\"q\" \\ \u0001 é 🎉 \u2028 end"

const vip: AudienceRef = { sourceId: "web", audience: "VIP" }

export const audienceStoreSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)
  describe("audience syncs", () => {
    test(
      "one lease per audience: busy while held, taken over once expired, released at the end",
      Effect.gen(function*() {
        const audienceMembers = yield* AudienceMembers
        const lease = 60 * second
        assert.deepStrictEqual(yield* audienceMembers.startAudienceSync(vip, "vip", "a", T0, T0 + lease), {
          _tag: "Started",
          created: true
        })
        assert.deepStrictEqual(yield* audienceMembers.startAudienceSync(vip, "vip", "b", T0 + 1, T0 + 1 + lease), {
          _tag: "Busy",
          leaseExpiresAt: T0 + lease
        })
        // Another audience of the source is independent, unless it is sent as the same property.
        assert.strictEqual(
          (yield* audienceMembers.startAudienceSync(
            { sourceId: "web", audience: "Churn" },
            "churn",
            "c",
            T0,
            T0 + lease
          ))._tag,
          "Started"
        )
        assert.deepStrictEqual(
          yield* audienceMembers.startAudienceSync({ sourceId: "web", audience: "vip" }, "vip", "d", T0, T0 + lease),
          { _tag: "PropertyTaken", audience: "VIP" }
        )
        // Same property in another source is fine.
        assert.strictEqual(
          (yield* audienceMembers.startAudienceSync({ sourceId: "app", audience: "vip" }, "vip", "e", T0, T0 + lease))
            ._tag,
          "Started"
        )

        // a's chunks renew its lease; b takes over only after it expired, and then a's chunks are refused.
        const chunk = (owner: string, now: number) =>
          audienceMembers.applyAudienceChunk({
            ref: vip,
            owner,
            now,
            leaseUntil: now + lease,
            change: "add",
            userIds: [`${owner}-${now}`]
          })
        assert.deepStrictEqual(yield* chunk("a", T0 + 50 * second), { _tag: "Applied", changed: 1, jobsCreated: 0 })
        assert.strictEqual(
          (yield* audienceMembers.startAudienceSync(vip, "vip", "b", T0 + lease, T0 + 2 * lease))._tag,
          "Busy"
        )
        const later = T0 + 50 * second + lease
        assert.strictEqual(
          (yield* audienceMembers.startAudienceSync(vip, "vip", "b", later, later + lease))._tag,
          "Started"
        )
        assert.deepStrictEqual(yield* chunk("a", later + 1), { _tag: "LeaseLost" })
        // a's end does not release b's lease.
        yield* audienceMembers.endAudienceSync(vip, "a", later + 2, false)
        assert.strictEqual(
          (yield* audienceMembers.startAudienceSync(vip, "vip", "c", later + 3, later + lease))._tag,
          "Busy"
        )
        yield* audienceMembers.endAudienceSync(vip, "b", later + 4, true)
        assert.deepStrictEqual(yield* audienceMembers.startAudienceSync(vip, "vip", "c", later + 5, later + lease), {
          _tag: "Started",
          created: false
        })
      })
    )

    test(
      "a chunk reports and enqueues exactly the members it added or removed",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        const audienceMembers = yield* AudienceMembers
        const lease = T0 + 60 * second
        yield* audienceMembers.startAudienceSync(vip, "vip", "o", T0, lease)
        const adds = recordingBuilder()
        const added = yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0,
          leaseUntil: lease,
          change: "add",
          userIds: ["u1", "u2", "u3"],
          identify: { build: adds.build, destinationIds: ["webhooks"] }
        })
        assert.deepStrictEqual(added, { _tag: "Applied", changed: 3, jobsCreated: 3 })
        const again = recordingBuilder()
        const overlapping = yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0 + 1,
          leaseUntil: lease,
          change: "add",
          userIds: ["u2", "u3", "u4"],
          identify: { build: again.build, destinationIds: ["webhooks"] }
        })
        assert.deepStrictEqual(overlapping, { _tag: "Applied", changed: 1, jobsCreated: 1 })
        assert.deepStrictEqual(again.calls, [["u4", true]])
        const removes = recordingBuilder()
        const removed = yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0 + 2,
          leaseUntil: lease,
          change: "remove",
          userIds: ["u1", "nobody"],
          identify: { build: removes.build, destinationIds: ["webhooks"] }
        })
        assert.deepStrictEqual(removed, { _tag: "Applied", changed: 1, jobsCreated: 1 })
        assert.deepStrictEqual(removes.calls, [["u1", false]])
        // Without identifies (no destination takes them) memberships change and no job is made.
        const silent = yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0 + 3,
          leaseUntil: lease,
          change: "add",
          userIds: ["u5"]
        })
        assert.deepStrictEqual(silent, { _tag: "Applied", changed: 1, jobsCreated: 0 })

        const [job] = yield* messageLog.jobsForMessage("id-u4-true")
        assert.deepStrictEqual([job!.kind, job!.userId, job!.sourceId, job!.status], [
          "audience",
          "u4",
          "web",
          "pending"
        ])
        const [claimed] = (yield* outbox.claimDue("w", T0 + 10, 10, 1000)).filter((j) => j.messageId === "id-u1-false")
        const expected = new TextEncoder().encode(JSON.stringify({ userId: "u1", value: false, text: tricky }))
        assert.deepStrictEqual(Buffer.from(claimed!.body), Buffer.from(expected))
        assert.strictEqual(decoder.decode(claimed!.body), JSON.stringify({ userId: "u1", value: false, text: tricky }))
        assert.strictEqual((yield* outbox.backlog()).pending + (yield* outbox.backlog()).delivering, 5)
      })
    )

    test(
      "an identify goes to each destination given, one job each, its body stored once and read by every job",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        const audienceMembers = yield* AudienceMembers
        const lease = T0 + 60 * second
        yield* audienceMembers.startAudienceSync(vip, "vip", "o", T0, lease)
        const adds = recordingBuilder()
        const added = yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0,
          leaseUntil: lease,
          change: "add",
          userIds: ["u1", "u2"],
          identify: { build: adds.build, destinationIds: ["webhooks", "crm"] }
        })
        assert.deepStrictEqual(added, { _tag: "Applied", changed: 2, jobsCreated: 4 })
        // One body per user, built once for both of its jobs.
        assert.deepStrictEqual(adds.calls, [["u1", true], ["u2", true]])
        const jobs = yield* messageLog.jobsForMessage("id-u1-true")
        assert.deepStrictEqual(jobs.map((job) => [job.destinationId, job.userId, job.kind]), [
          ["webhooks", "u1", "audience"],
          ["crm", "u1", "audience"]
        ])
        const claimed = yield* outbox.claimDue("w", T0 + 10, 10, 1000)
        assert.strictEqual(claimed.length, 4)
        for (const job of claimed) {
          assert.strictEqual(
            decoder.decode(job.body),
            JSON.stringify({ userId: job.userId, value: true, text: tricky }),
            `${job.messageId} ${job.destinationId}`
          )
        }
        assert.deepStrictEqual(
          claimed.map((job) => `${job.messageId} ${job.destinationId}`).sort(),
          ["id-u1-true crm", "id-u1-true webhooks", "id-u2-true crm", "id-u2-true webhooks"]
        )
      })
    )

    test(
      "members are read a page at a time in key order, and looked up among given ids",
      Effect.gen(function*() {
        const audienceMembers = yield* AudienceMembers
        yield* audienceMembers.startAudienceSync(vip, "vip", "o", T0, T0 + 60 * second)
        const ids = Array.from({ length: 25 }, (_, i) => `user-${String(i).padStart(3, "0")}`)
        yield* audienceMembers.applyAudienceChunk({
          ref: vip,
          owner: "o",
          now: T0,
          leaseUntil: T0 + 60 * second,
          change: "add",
          userIds: [...ids].reverse()
        })
        const pages: Array<ReadonlyArray<string>> = []
        let after: string | undefined
        while (true) {
          const page: ReadonlyArray<string> = yield* audienceMembers.audienceMembersPage(vip, after, 10)
          if (page.length === 0) break
          pages.push(page)
          after = page[page.length - 1]
        }
        assert.deepStrictEqual(pages.map((page) => page.length), [10, 10, 5])
        assert.deepStrictEqual(pages.flat(), ids)
        const among = yield* audienceMembers.audienceMembersAmong(vip, ["user-003", "nobody", "user-024", "user-025"])
        assert.deepStrictEqual([...among].sort(), ["user-003", "user-024"])
        assert.deepStrictEqual(yield* audienceMembers.audienceMembersAmong(vip, []), [])
        assert.deepStrictEqual(
          yield* audienceMembers.audienceMembersAmong({ sourceId: "app", audience: "VIP" }, ["user-003"]),
          []
        )
        assert.deepStrictEqual(
          yield* audienceMembers.audienceMembersPage({ sourceId: "web", audience: "x" }, undefined, 10),
          []
        )
      })
    )
  })

  describe("computed traits", () => {
    test(
      "only new or different values are stored and enqueued; null clears a stored value",
      Effect.gen(function*() {
        const traitValues = yield* TraitValues
        const first = recordingBuilder()
        const one = yield* traitValues.applyTraitChunk({
          sourceId: "web",
          trait: "plan",
          now: T0,
          values: [["u1", "\"gold\""], ["u2", "3"], ["u3", "true"]],
          identify: { build: first.build, destinationIds: ["webhooks"] }
        })
        assert.deepStrictEqual(one, { changed: 3, cleared: 0, jobsCreated: 3 })
        assert.deepStrictEqual(first.calls.sort(), [["u1", "gold"], ["u2", 3], ["u3", true]])

        const next = recordingBuilder()
        const two = yield* traitValues.applyTraitChunk({
          sourceId: "web",
          trait: "plan",
          now: T0 + 1,
          values: [["u1", "\"gold\""], ["u2", "4"], ["u3", null], ["u4", null], ["u5", "\"new\""]],
          identify: { build: next.build, destinationIds: ["webhooks"] }
        })
        assert.deepStrictEqual(two, { changed: 2, cleared: 1, jobsCreated: 3 })
        assert.deepStrictEqual(next.calls.sort(), [["u2", 4], ["u3", null], ["u5", "new"]])
        // Another trait, or the same trait of another source, is separate.
        const other = yield* traitValues.applyTraitChunk({
          sourceId: "app",
          trait: "plan",
          now: T0 + 2,
          values: [["u1", "\"gold\""]]
        })
        assert.deepStrictEqual(other, { changed: 1, cleared: 0, jobsCreated: 0 })
      })
    )
  })
}
