import { assert, describe } from "@effect/vitest"
import { Clock, Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { lastUsedEvery, makeAccess } from "../../src/relay/RelayAccess.js"
import { ApiKeys } from "../../src/store/ApiKeys.js"
import { AuditLog } from "../../src/store/AuditLog.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { type FreshStore, second, storeTest, T0 } from "./storeFixtures.js"

/** The store's side of API keys and the audit log (REFERENCE §7c), run against every implementation. */
export const apiKeyStoreSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("API keys", () => {
    test(
      "are created, found by hash, listed newest first, touched and revoked once",
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const created = yield* keys.createKey({
          id: "key_a",
          name: "ci",
          keyHash: "aa".repeat(32),
          scopes: ["sources:read", "replay"],
          sourceIds: ["web", "ios"]
        }, T0)
        assert.deepStrictEqual(created, {
          id: "key_a",
          name: "ci",
          keyHash: "aa".repeat(32),
          scopes: ["sources:read", "replay"],
          sourceIds: ["web", "ios"],
          createdAt: T0,
          lastUsedAt: null,
          revokedAt: null
        })
        yield* keys.createKey({
          id: "key_b",
          name: "admin",
          keyHash: "bb".repeat(32),
          scopes: ["admin"],
          sourceIds: null
        }, T0 + 1)
        assert.deepStrictEqual((yield* keys.listKeys()).map((key) => key.id), ["key_b", "key_a"])
        assert.deepStrictEqual(yield* keys.findKeyByHash("aa".repeat(32)), Option.some(created))
        assert.isTrue(Option.isNone(yield* keys.findKeyByHash("cc".repeat(32))))
        assert.strictEqual(Option.getOrThrow(yield* keys.findKeyByHash("bb".repeat(32))).sourceIds, null)

        yield* keys.touchKey("key_a", T0 + 5)
        const revoked = yield* keys.revokeKey("key_a", T0 + 10)
        assert.deepStrictEqual(
          Option.map(revoked, (key) => [key.lastUsedAt, key.revokedAt]),
          Option.some([T0 + 5, T0 + 10])
        )
        const again = yield* keys.revokeKey("key_a", T0 + 20)
        assert.deepStrictEqual(Option.map(again, (key) => key.revokedAt), Option.some(T0 + 10))
        assert.isTrue(Option.isNone(yield* keys.revokeKey("key_nope", T0)))
        // The hash is unique: one key text, one key.
        const duplicate = yield* Effect.result(
          keys.createKey({ id: "key_c", name: "dup", keyHash: "bb".repeat(32), scopes: ["admin"], sourceIds: null }, T0)
        )
        assert.strictEqual(duplicate._tag, "Failure")
      })
    )

    test(
      "authenticate by the key's text, note the last use at most once a minute, and refuse revoked keys",
      Effect.gen(function*() {
        const clock = yield* TestClock.make()
        yield* clock.setTime(T0)
        const access = makeAccess(yield* ApiKeys, yield* AuditLog, yield* MessageLog)
        const at = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provideService(self, Clock.Clock, clock)
        const { apiKey, key } = yield* at(access.createKey({ name: "ci", scopes: ["replay"], sourceIds: null }))
        assert.match(key, /^hrk_/)
        assert.notInclude(JSON.stringify(yield* access.listKeys), key)
        const lastUsed = Effect.map(access.listKeys, (keys) => keys[0]!.lastUsedAt)

        assert.strictEqual(Option.getOrThrow(yield* at(access.authenticateKey(key))).id, apiKey.id)
        assert.strictEqual(yield* lastUsed, T0)
        yield* clock.adjust(lastUsedEvery - second)
        assert.isTrue(Option.isSome(yield* at(access.authenticateKey(key))))
        assert.strictEqual(yield* lastUsed, T0, "not written again within the minute")
        yield* clock.adjust(second)
        assert.isTrue(Option.isSome(yield* at(access.authenticateKey(key))))
        assert.strictEqual(yield* lastUsed, T0 + lastUsedEvery)

        assert.isTrue(Option.isNone(yield* at(access.authenticateKey(`${key}x`))))
        yield* at(access.revokeKey(apiKey.id))
        assert.isTrue(Option.isNone(yield* at(access.authenticateKey(key))))
      }).pipe(Effect.scoped)
    )
  })

  describe("audit log", () => {
    test(
      "keeps every entry as given, newest first, paged by id",
      Effect.gen(function*() {
        const audit = yield* AuditLog
        const entry = (n: number) => ({
          at: T0 + n,
          keyId: n % 2 === 0 ? null : "key_a",
          keyName: n % 2 === 0 ? "admin token" : "ci",
          method: "PUT",
          route: "/admin/sources/{sourceId}",
          path: `/admin/sources/s${n}`,
          sourceId: `s${n}`,
          destinationId: n === 3 ? "crm" : null,
          address: n === 4 ? null : "127.0.0.1",
          status: 200 + n
        })
        for (let n = 0; n < 5; n++) yield* audit.appendAudit(entry(n))
        const all = yield* audit.listAudit({ limit: 10 })
        assert.deepStrictEqual(all.map(({ id: _id, ...rest }) => rest), [4, 3, 2, 1, 0].map(entry))
        const first = yield* audit.listAudit({ limit: 2 })
        const next = yield* audit.listAudit({ limit: 2, before: first[1]!.id })
        const last = yield* audit.listAudit({ limit: 2, before: next[1]!.id })
        assert.deepStrictEqual([...first, ...next, ...last].map((e) => e.sourceId), ["s4", "s3", "s2", "s1", "s0"])
        assert.deepStrictEqual(yield* audit.listAudit({ limit: 2, before: last[0]!.id }), [])
      })
    )
  })
}
