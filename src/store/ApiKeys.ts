import { Context, Effect, Option } from "effect"
import { num, numOrNull } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit } from "./StoreKit.js"

/** An admin API key as stored: never its text, only the SHA-256 of it (`keyHash`, hex). */
export interface StoredApiKey {
  readonly id: string
  readonly name: string
  readonly keyHash: string
  readonly scopes: ReadonlyArray<string>
  /** The sources the key is limited to; `null`: every source. */
  readonly sourceIds: ReadonlyArray<string> | null
  readonly createdAt: number
  readonly lastUsedAt: number | null
  readonly revokedAt: number | null
}

export type NewApiKey = Pick<StoredApiKey, "id" | "name" | "keyHash" | "scopes" | "sourceIds">

export interface ApiKeysShape {
  readonly createKey: (key: NewApiKey, now: number) => Effect.Effect<StoredApiKey, StoreError>
  /** Every key, revoked ones too, newest first. */
  readonly listKeys: () => Effect.Effect<ReadonlyArray<StoredApiKey>, StoreError>
  /** The key whose text hashes to `keyHash`, revoked or not. */
  readonly findKeyByHash: (keyHash: string) => Effect.Effect<Option.Option<StoredApiKey>, StoreError>
  /** Marks the key revoked (once: a second revocation keeps the first time); none when there is no such key. */
  readonly revokeKey: (id: string, now: number) => Effect.Effect<Option.Option<StoredApiKey>, StoreError>
  readonly touchKey: (id: string, now: number) => Effect.Effect<void, StoreError>
}

/** The admin API's keys (REFERENCE §7c). */
export class ApiKeys extends Context.Service<ApiKeys, ApiKeysShape>()("hookrelay/store/ApiKeys") {}

interface KeyRow {
  readonly id: string
  readonly name: string
  readonly key_hash: string
  readonly scopes: string
  readonly source_ids: string | null
  readonly created_at: unknown
  readonly last_used_at: unknown
  readonly revoked_at: unknown
}

const toKey = (row: KeyRow): StoredApiKey => ({
  id: row.id,
  name: row.name,
  keyHash: row.key_hash,
  scopes: JSON.parse(row.scopes) as ReadonlyArray<string>,
  sourceIds: row.source_ids === null ? null : JSON.parse(row.source_ids) as ReadonlyArray<string>,
  createdAt: num(row.created_at),
  lastUsedAt: numOrNull(row.last_used_at),
  revokedAt: numOrNull(row.revoked_at)
})

const columns = "id, name, key_hash, scopes, source_ids, created_at, last_used_at, revoked_at"

export const make = ({ reads, sql }: StoreKit): ApiKeysShape => {
  const selected = sql.literal(columns)

  const createKey = Effect.fn("Store.createKey")(
    function*(key: NewApiKey, now: number) {
      const sourceIds = key.sourceIds === null ? null : JSON.stringify(key.sourceIds)
      yield* sql`
        INSERT INTO api_keys (id, name, key_hash, scopes, source_ids, created_at)
        VALUES (${key.id}, ${key.name}, ${key.keyHash}, ${JSON.stringify(key.scopes)}, ${sourceIds}, ${now})`
      return { ...key, createdAt: now, lastUsedAt: null, revokedAt: null } satisfies StoredApiKey
    },
    fail("createKey")
  )

  const listKeys = Effect.fn("Store.listKeys")(
    function*() {
      const rows = yield* reads<KeyRow>`SELECT ${selected} FROM api_keys ORDER BY created_at DESC, id DESC`
      return rows.map(toKey)
    },
    fail("listKeys")
  )

  const findKeyByHash = Effect.fn("Store.findKeyByHash")(
    function*(keyHash: string) {
      // On the writing connection, not `reads`: a revocation just committed holds for the very next request.
      const rows = yield* sql<KeyRow>`SELECT ${selected} FROM api_keys WHERE key_hash = ${keyHash}`
      return Option.map(Option.fromNullishOr(rows[0]), toKey)
    },
    fail("findKeyByHash")
  )

  const revokeKey = Effect.fn("Store.revokeKey")(
    function*(id: string, now: number) {
      const rows = yield* sql<KeyRow>`
        UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${now}) WHERE id = ${id} RETURNING ${selected}`
      return Option.map(Option.fromNullishOr(rows[0]), toKey)
    },
    fail("revokeKey")
  )

  const touchKey = Effect.fn("Store.touchKey")(
    function*(id: string, now: number) {
      yield* sql`UPDATE api_keys SET last_used_at = ${now} WHERE id = ${id}`
    },
    fail("touchKey")
  )

  return { createKey, listKeys, findKeyByHash, revokeKey, touchKey }
}
