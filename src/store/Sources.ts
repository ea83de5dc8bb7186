import { Context, Effect, Option, Schema } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { type SourceConfig, WebhookSettings } from "../domain/Settings.js"
import type { StoredSource } from "./Model.js"
import { num } from "./Rows.js"
import { StoreError, WriteKeyConflict } from "./StoreError.js"
import { fail, type StoreKit, untraced } from "./StoreKit.js"

export interface SourcesShape {
  readonly upsertSource: (
    source: SourceConfig,
    now: number
  ) => Effect.Effect<StoredSource, StoreError | WriteKeyConflict>
  readonly getSource: (id: string) => Effect.Effect<Option.Option<StoredSource>, StoreError>
  /** Looks the key up by its SHA-256, then compares the key itself in constant time. */
  readonly findSourceByWriteKey: (writeKey: string) => Effect.Effect<Option.Option<StoredSource>, StoreError>
  readonly listSources: () => Effect.Effect<ReadonlyArray<StoredSource>, StoreError>
  /** Removes the source (not its jobs). `false` when there was no such source. */
  readonly deleteSource: (id: string) => Effect.Effect<boolean, StoreError>
}

/** Sources: their write keys (looked up by hash, compared in constant time) and webhook settings. */
export class Sources extends Context.Service<Sources, SourcesShape>()("hookrelay/store/Sources") {}

const hashWriteKey = (writeKey: string): string => createHash("sha256").update(writeKey, "utf8").digest("hex")

const sameSecret = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && timingSafeEqual(left, right)
}

const WebhooksJson = Schema.fromJsonString(WebhookSettings)
const decodeWebhooks = Schema.decodeUnknownEffect(WebhooksJson)
const encodeWebhooks = Schema.encodeEffect(WebhooksJson)

interface SourceRow {
  readonly id: string
  readonly write_key: string
  readonly webhooks: string | null
  readonly created_at: unknown
  readonly updated_at: unknown
}

const toSource = (row: SourceRow): Effect.Effect<StoredSource, StoreError> =>
  row.webhooks === null
    ? Effect.succeed({
      id: row.id,
      writeKey: row.write_key,
      createdAt: num(row.created_at),
      updatedAt: num(row.updated_at)
    })
    : decodeWebhooks(row.webhooks).pipe(
      Effect.map((webhooks): StoredSource => ({
        id: row.id,
        writeKey: row.write_key,
        webhooks,
        createdAt: num(row.created_at),
        updatedAt: num(row.updated_at)
      })),
      fail("decodeSource")
    )

export const make = ({ sql }: StoreKit): SourcesShape => {
  const upsertSource = Effect.fn("Store.upsertSource")(
    function*(source: SourceConfig, now: number) {
      const hash = hashWriteKey(source.writeKey)
      const webhooks = source.webhooks === undefined ? null : yield* encodeWebhooks(source.webhooks)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        const taken = yield* sql<{ id: string }>`
          SELECT id FROM sources WHERE write_key_hash = ${hash} AND id <> ${source.id}`
        if (taken.length > 0) {
          return yield* new WriteKeyConflict({ sourceId: source.id, conflictingSourceId: taken[0]!.id })
        }
        const rows = yield* sql<SourceRow>`
          INSERT INTO sources (id, write_key, write_key_hash, webhooks, created_at, updated_at)
          VALUES (${source.id}, ${source.writeKey}, ${hash}, ${webhooks}, ${now}, ${now})
          ON CONFLICT (id) DO UPDATE SET
            write_key = excluded.write_key,
            write_key_hash = excluded.write_key_hash,
            webhooks = excluded.webhooks,
            updated_at = excluded.updated_at
          RETURNING id, write_key, webhooks, created_at, updated_at`
        return rows[0]!
      }))
      return yield* toSource(row)
    },
    Effect.mapError((error) =>
      error instanceof WriteKeyConflict || error instanceof StoreError
        ? error
        : new StoreError({ operation: "upsertSource", cause: error })
    )
  )

  const getSource = Effect.fn("Store.getSource")(
    function*(id: string) {
      const rows = yield* sql<SourceRow>`
        SELECT id, write_key, webhooks, created_at, updated_at FROM sources WHERE id = ${id}`
      return rows.length === 0 ? Option.none() : Option.some(yield* toSource(rows[0]!))
    },
    fail("getSource")
  )

  const findSourceByWriteKey = Effect.fn("Store.findSourceByWriteKey")(
    function*(writeKey: string) {
      const rows = yield* sql<SourceRow>`
        SELECT id, write_key, webhooks, created_at, updated_at FROM sources
        WHERE write_key_hash = ${hashWriteKey(writeKey)}`
      const row = rows[0]
      if (row === undefined || !sameSecret(row.write_key, writeKey)) return Option.none<StoredSource>()
      return Option.some(yield* toSource(row))
    },
    untraced,
    fail("findSourceByWriteKey")
  )

  const listSources = Effect.fn("Store.listSources")(
    function*() {
      const rows = yield* sql<SourceRow>`
        SELECT id, write_key, webhooks, created_at, updated_at FROM sources ORDER BY id`
      return yield* Effect.forEach(rows, toSource)
    },
    fail("listSources")
  )

  const deleteSource = Effect.fn("Store.deleteSource")(
    function*(id: string) {
      const rows = yield* sql<{ id: string }>`DELETE FROM sources WHERE id = ${id} RETURNING id`
      return rows.length > 0
    },
    fail("deleteSource")
  )

  return { upsertSource, getSource, findSourceByWriteKey, listSources: () => listSources(), deleteSource }
}
