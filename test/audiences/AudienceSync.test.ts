import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { makeAudienceSync } from "../../src/audiences/AudienceSync.js"
import { makeComputedTraits } from "../../src/audiences/ComputedTraits.js"
import { AudienceMembers } from "../../src/store/AudienceMembers.js"
import { Outbox } from "../../src/store/Outbox.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import { StoreError } from "../../src/store/StoreError.js"
import { TraitValues } from "../../src/store/TraitValues.js"
import { type ReceivedRequest, startServer, type TestServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { admin, isoWithMillis, parsed, signatureOf, uuidV7 } from "./support.js"

/** Audience membership sync and computed traits (REFERENCE §6) over real HTTP, delivered to a loopback receiver. */

const secret = "whsec_audiences_test"
const audiencePath = (name: string, sourceId = "web") =>
  `/admin/sources/${sourceId}/audiences/${encodeURIComponent(name)}`
const traitPath = (name: string, sourceId = "web") => `/admin/sources/${sourceId}/traits/${encodeURIComponent(name)}`

const setup = (options: { readonly dispatch?: boolean; readonly enabled?: boolean } = {}) =>
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp({ dispatch: options.dispatch ?? true })
    yield* app.relaySources.putSource({
      id: "web",
      writeKey: "wk_web",
      webhooks: {
        enabled: options.enabled ?? true,
        sharedSecret: secret,
        endpoints: [{ url: `${receiver.url}/hook` }]
      }
    })
    return { app, receiver }
  })

/** The identify traits received since `from`, as [userId, traits] sorted by user. */
const identifiesSince = (receiver: TestServer, from: number) =>
  receiver.requests.slice(from).map(parsed).map((body) => [body.userId, body.traits] as const).sort((a, b) =>
    a[0] < b[0] ? -1 : 1
  )

/** The REFERENCE §3 identify body, built like ingest builds one, with a valid signature. */
const expectIdentifyBody = (request: ReceivedRequest, userId: string, traits: Record<string, unknown>) => {
  const body = parsed(request)
  expect(Object.keys(body)).toStrictEqual([
    "version",
    "type",
    "messageId",
    "userId",
    "traits",
    "timestamp",
    "receivedAt",
    "context"
  ])
  expect(body).toStrictEqual({
    version: 1,
    type: "identify",
    messageId: expect.stringMatching(uuidV7),
    userId,
    traits,
    timestamp: expect.stringMatching(isoWithMillis),
    receivedAt: body.timestamp,
    context: {}
  })
  expect(request.headers["x-signature"]).toBe(signatureOf(secret, request.body))
}

describe("audience sync (REFERENCE §6)", () => {
  it.live("first sync: true for every member; then only changes; an identical sync sends nothing", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      const first = yield* admin(app.baseUrl, "PUT", audiencePath("High Value Users"), {
        body: { userIds: ["alice", "bob", "carol"] }
      })
      expect(first.status).toBe(200)
      expect(first.body).toStrictEqual({ property: "high_value_users", added: 3, removed: 0, unchanged: 0 })
      yield* waitUntil(() => receiver.requests.length === 3, "3 identifies")
      expect(identifiesSince(receiver, 0)).toStrictEqual([
        ["alice", { high_value_users: true }],
        ["bob", { high_value_users: true }],
        ["carol", { high_value_users: true }]
      ])
      for (const request of receiver.requests) {
        expectIdentifyBody(request, parsed(request).userId, { high_value_users: true })
      }
      expect(new Set(receiver.requests.map((request) => parsed(request).messageId)).size).toBe(3)

      const second = yield* admin(app.baseUrl, "PUT", audiencePath("High Value Users"), {
        body: { userIds: ["carol", "dave", "alice"] }
      })
      expect(second.body).toStrictEqual({ property: "high_value_users", added: 1, removed: 1, unchanged: 2 })
      yield* waitUntil(() => receiver.requests.length === 5, "2 more identifies")
      expect(identifiesSince(receiver, 3)).toStrictEqual([
        ["bob", { high_value_users: false }],
        ["dave", { high_value_users: true }]
      ])
      expectIdentifyBody(receiver.requests.slice(3).find((r) => parsed(r).userId === "bob")!, "bob", {
        high_value_users: false
      })

      const third = yield* admin(app.baseUrl, "PUT", audiencePath("High Value Users"), {
        body: { userIds: ["alice", "carol", "dave"] }
      })
      expect(third.body).toStrictEqual({ property: "high_value_users", added: 0, removed: 0, unchanged: 3 })
      // Nothing was enqueued: the outbox holds exactly the five delivered identifies.
      yield* Effect.sleep("300 millis")
      expect(receiver.requests).toHaveLength(5)
      const backlog = yield* app.outbox.backlog()
      expect(backlog).toStrictEqual({ pending: 0, delivering: 0, delivered: 5, dead: 0 })
    }))

  it.live("an empty membership removes everyone; duplicates collapse", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      const first = yield* admin(app.baseUrl, "PUT", audiencePath("PowerUsers"), {
        body: { userIds: ["a", "b", "a", "b", "c"] }
      })
      expect(first.body).toStrictEqual({ property: "power_users", added: 3, removed: 0, unchanged: 0 })
      yield* waitUntil(() => receiver.requests.length === 3, "3 identifies")
      const emptied = yield* admin(app.baseUrl, "PUT", audiencePath("PowerUsers"), { body: { userIds: [] } })
      expect(emptied.body).toStrictEqual({ property: "power_users", added: 0, removed: 3, unchanged: 0 })
      yield* waitUntil(() => receiver.requests.length === 6, "3 removals")
      expect(identifiesSince(receiver, 3).map(([userId, traits]) => [userId, traits.power_users])).toStrictEqual([
        ["a", false],
        ["b", false],
        ["c", false]
      ])
    }))

  it.live("with the destination disabled, memberships are kept and counted but nothing is sent", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup({ enabled: false })
      const first = yield* admin(app.baseUrl, "PUT", audiencePath("VIP"), { body: { userIds: ["a", "b"] } })
      expect(first.body).toStrictEqual({ property: "vip", added: 2, removed: 0, unchanged: 0 })
      const second = yield* app.relayAudiences.syncAudience("web", "VIP", ["b", "c"])
      expect(second).toStrictEqual({ property: "vip", added: 1, removed: 1, unchanged: 1 })
      expect(yield* app.outbox.backlog()).toStrictEqual({ pending: 0, delivering: 0, delivered: 0, dead: 0 })
      expect(receiver.requests).toHaveLength(0)
    }))

  it.live("refusals: 400 naming the field, 404 for an unknown source, 409 for a taken property or a running sync", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{}, "userIds"],
        [{ userIds: "alice" }, "userIds"],
        [{ userIds: ["alice", ""] }, "userIds[1]"],
        [{ userIds: ["alice", 7] }, "userIds[1]"],
        [{ userIds: ["x".repeat(1001)] }, "userIds[0]"],
        [["alice"], ""]
      ]
      for (const [body, path] of cases) {
        const answer = yield* admin(app.baseUrl, "PUT", audiencePath("VIP"), { body })
        expect(answer.status, JSON.stringify(body).slice(0, 50)).toBe(400)
        expect(answer.body.errors.map((e: any) => e.path)).toContain(path)
      }
      const badName = yield* admin(app.baseUrl, "PUT", audiencePath("!!!"), { body: { userIds: [] } })
      expect(badName.status).toBe(400)
      expect(badName.body.errors).toStrictEqual([{ path: "audienceName", message: "must contain a letter or a digit" }])

      const unknown = yield* admin(app.baseUrl, "PUT", audiencePath("VIP", "nope"), { body: { userIds: ["a"] } })
      expect(unknown.status).toBe(404)

      expect((yield* admin(app.baseUrl, "PUT", audiencePath("High Value"), { body: { userIds: ["a"] } })).status).toBe(
        200
      )
      const taken = yield* admin(app.baseUrl, "PUT", audiencePath("high-value"), { body: { userIds: ["a"] } })
      expect(taken.status).toBe(409)
      expect(taken.body.code).toBe("property_taken")

      // Another sync (any process) holds the audience's lease.
      const now = Date.now()
      yield* app.audienceMembers.startAudienceSync(
        { sourceId: "web", audience: "Busy" },
        "busy",
        "other",
        now,
        now + 60_000
      )
      const busy = yield* admin(app.baseUrl, "PUT", audiencePath("Busy"), { body: { userIds: ["a"] } })
      expect(busy.status).toBe(409)
      expect(busy.body.code).toBe("sync_in_progress")
      yield* app.audienceMembers.endAudienceSync({ sourceId: "web", audience: "Busy" }, "other", now, true)
      expect((yield* admin(app.baseUrl, "PUT", audiencePath("Busy"), { body: { userIds: ["a"] } })).status).toBe(200)

      expect(
        (yield* admin(app.baseUrl, "PUT", audiencePath("VIP"), { body: { userIds: [] }, authorization: null })).status
      ).toBe(401)
      // Refused requests stored nothing: two syncs of one member each.
      expect((yield* app.outbox.backlog()).pending).toBe(2)
    }))

  it.live(
    "100 000 members: the first sync enqueues 100 000 identifies; a 1 % change enqueues 2 000",
    () =>
      Effect.gen(function*() {
        const { app } = yield* setup({ dispatch: false })
        const members = Array.from({ length: 100_000 }, (_, i) => `user-${i}`)
        const first = yield* admin(app.baseUrl, "PUT", audiencePath("Everyone"), { body: { userIds: members } })
        expect(first.status).toBe(200)
        expect(first.body).toStrictEqual({ property: "everyone", added: 100_000, removed: 0, unchanged: 0 })
        expect((yield* app.outbox.backlog()).pending).toBe(100_000)

        // 1 000 leave, 1 000 join.
        const next = [...members.slice(1_000), ...Array.from({ length: 1_000 }, (_, i) => `new-${i}`)]
        const second = yield* app.relayAudiences.syncAudience("web", "Everyone", next)
        expect(second).toStrictEqual({ property: "everyone", added: 1_000, removed: 1_000, unchanged: 99_000 })
        expect((yield* app.outbox.backlog()).pending).toBe(102_000)
      }),
    { timeout: 120_000 }
  )
})

describe("audience sync: one logical operation", () => {
  /** The store of a fresh SQLite file, and the sync built over it with small chunks. */
  const storeLayer = Layer.unwrap(
    Effect.map(tempDirectory, (directory) => StoreLayers.layerSqlite({ directory }))
  )

  it.live("a sync stopped half way leaves a consistent state; running it again sends each change exactly once", () =>
    Effect.gen(function*() {
      const sources = yield* Sources
      const outbox = yield* Outbox
      const audienceMembers = yield* AudienceMembers
      const signal = yield* OutboxSignal.make
      yield* sources.upsertSource({
        id: "web",
        writeKey: "wk",
        webhooks: { enabled: true, endpoints: [{ url: "https://example.com/hook" }] }
      }, 0)
      // The store fails the third chunk.
      let chunks = 0
      const failing = {
        ...audienceMembers,
        applyAudienceChunk: (chunk: Parameters<typeof audienceMembers.applyAudienceChunk>[0]) =>
          ++chunks === 3
            ? Effect.fail(new StoreError({ operation: "test", cause: "boom" }))
            : audienceMembers.applyAudienceChunk(chunk)
      }
      const members = Array.from({ length: 1_000 }, (_, i) => `u${String(i).padStart(4, "0")}`)
      const broken = yield* Effect.flip(
        makeAudienceSync({ sources, members: failing }, signal, { chunkSize: 100 }).syncAudience("web", "Fans", members)
      )
      expect(broken._tag).toBe("StoreError")
      // Two chunks committed, each with its messages; the lease was given back.
      expect((yield* outbox.backlog()).pending).toBe(200)

      const sync = makeAudienceSync({ sources, members: audienceMembers }, signal, { chunkSize: 100 })
      const resumed = yield* sync.syncAudience("web", "Fans", members)
      expect(resumed).toStrictEqual({ property: "fans", added: 800, removed: 0, unchanged: 200 })
      expect((yield* outbox.backlog()).pending).toBe(1_000)
      // Exactly one identify per member.
      const jobs = yield* outbox.claimDue("check", Date.now() + 1_000, 2_000, 60_000)
      const users = jobs.map((job) => JSON.parse(new TextDecoder().decode(job.body)).userId as string)
      expect(new Set(users).size).toBe(1_000)
      expect(jobs.every((job) => job.kind === "audience")).toBe(true)

      // Removal pages stay correct while rows behind the cursor are deleted: keep every third member.
      const kept = members.filter((_, i) => i % 3 === 0)
      const thinned = yield* sync.syncAudience("web", "Fans", kept)
      expect(thinned).toStrictEqual({
        property: "fans",
        added: 0,
        removed: 1_000 - kept.length,
        unchanged: kept.length
      })
      const again = yield* sync.syncAudience("web", "Fans", kept)
      expect(again).toStrictEqual({ property: "fans", added: 0, removed: 0, unchanged: kept.length })
    }).pipe(Effect.provide(storeLayer)))

  it.live("two syncs of one audience at once: the second is refused while the first runs", () =>
    Effect.gen(function*() {
      const sources = yield* Sources
      const audienceMembers = yield* AudienceMembers
      const signal = yield* OutboxSignal.make
      yield* sources.upsertSource({ id: "web", writeKey: "wk" }, 0)
      const sync = makeAudienceSync({ sources, members: audienceMembers }, signal, { chunkSize: 50 })
      const members = Array.from({ length: 5_000 }, (_, i) => `u${i}`)
      const [one, two] = yield* Effect.all([
        Effect.result(sync.syncAudience("web", "Fans", members)),
        Effect.result(Effect.andThen(Effect.yieldNow, sync.syncAudience("web", "Fans", members.slice(1))))
      ], { concurrency: 2 })
      expect(one._tag).toBe("Success")
      expect(two._tag === "Failure" && two.failure._tag).toBe("AudienceSyncInProgress")
      // The lease was released: the next sync runs.
      expect(yield* sync.syncAudience("web", "Fans", members.slice(1))).toMatchObject({ removed: 1 })
    }).pipe(Effect.provide(storeLayer)))
})

describe("computed traits", () => {
  it.live("identify only for users whose value is new or different; absent users untouched; null clears", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      const first = yield* admin(app.baseUrl, "PUT", traitPath("Lifetime Value"), {
        body: { values: { alice: 120.5, bob: "gold", carol: true } }
      })
      expect(first.body).toStrictEqual({ property: "lifetime_value", changed: 3, cleared: 0, unchanged: 0 })
      yield* waitUntil(() => receiver.requests.length === 3, "3 identifies")
      expect(identifiesSince(receiver, 0)).toStrictEqual([
        ["alice", { lifetime_value: 120.5 }],
        ["bob", { lifetime_value: "gold" }],
        ["carol", { lifetime_value: true }]
      ])
      expectIdentifyBody(receiver.requests.find((r) => parsed(r).userId === "bob")!, "bob", { lifetime_value: "gold" })

      // alice unchanged, bob changed, carol absent (left alone), dave new, erin cleared without a value.
      const second = yield* admin(app.baseUrl, "PUT", traitPath("Lifetime Value"), {
        body: { values: { alice: 120.5, bob: "platinum", dave: 0, erin: null } }
      })
      expect(second.body).toStrictEqual({ property: "lifetime_value", changed: 2, cleared: 0, unchanged: 2 })
      yield* waitUntil(() => receiver.requests.length === 5, "2 more identifies")
      expect(identifiesSince(receiver, 3)).toStrictEqual([
        ["bob", { lifetime_value: "platinum" }],
        ["dave", { lifetime_value: 0 }]
      ])

      const third = yield* app.relayAudiences.syncComputedTrait("web", "Lifetime Value", { carol: null, alice: 120.5 })
      expect(third).toStrictEqual({ property: "lifetime_value", changed: 0, cleared: 1, unchanged: 1 })
      yield* waitUntil(() => receiver.requests.length === 6, "the clearing identify")
      expect(identifiesSince(receiver, 5)).toStrictEqual([["carol", { lifetime_value: null }]])
      // Cleared, then set again: new.
      expect((yield* app.relayAudiences.syncComputedTrait("web", "Lifetime Value", { carol: true })).changed).toBe(1)
    }))

  it.live("400 naming the field for values that are not JSON scalars", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [{}, "values"],
        [{ values: [1, 2] }, "values"],
        [{ values: { alice: { nested: 1 } } }, "values.alice"],
        [{ values: { alice: [1] } }, "values.alice"],
        [{ values: { "": 1 } }, "values."]
      ]
      for (const [body, path] of cases) {
        const answer = yield* admin(app.baseUrl, "PUT", traitPath("plan"), { body })
        expect(answer.status, JSON.stringify(body)).toBe(400)
        expect(answer.body.errors.map((e: any) => e.path)).toContain(path)
      }
      expect((yield* admin(app.baseUrl, "PUT", traitPath("plan", "nope"), { body: { values: {} } })).status).toBe(404)
      expect((yield* app.outbox.backlog()).pending).toBe(0)
    }))

  it.live("traits of a large sync are written in chunks", () =>
    Effect.gen(function*() {
      const sources = yield* Sources
      const outbox = yield* Outbox
      const signal = yield* OutboxSignal.make
      yield* sources.upsertSource({
        id: "web",
        writeKey: "wk",
        webhooks: { enabled: true, endpoints: [{ url: "https://example.com/hook" }] }
      }, 0)
      const traits = makeComputedTraits({ sources, traits: yield* TraitValues }, signal, { chunkSize: 300 })
      const values = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`u${i}`, i]))
      expect(yield* traits.syncComputedTrait("web", "score", values)).toStrictEqual({
        property: "score",
        changed: 2_000,
        cleared: 0,
        unchanged: 0
      })
      values.u7 = -1
      expect(yield* traits.syncComputedTrait("web", "score", values)).toMatchObject({ changed: 1, unchanged: 1_999 })
      expect((yield* outbox.backlog()).pending).toBe(2_001)
    }).pipe(
      Effect.provide(
        Layer.unwrap(Effect.map(tempDirectory, (directory) => StoreLayers.layerSqlite({ directory })))
      )
    ))
})
