import { Context, Effect, Option, Result, Schema } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { applySourceConfig, webhooksDestination, webhooksOf } from "../domain/Destinations.js"
import { Destination, type SourceConfig, webhooksDestinationId, WebhookSettings } from "../domain/Settings.js"
import type { JobKind, StoredSource } from "./Model.js"
import { num } from "./Rows.js"
import { openColumn, sealColumn } from "./SealedSettings.js"
import { makeSecretBox, type SecretBoxShape, type SecretKeysError } from "./SecretBox.js"
import { type SealReport, type SealScope, sealStoredSecrets } from "./SecretsAtRest.js"
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
  /**
   * Changes one source's destinations in one transaction: `change` gets the stored list (the destination `webhooks`
   * first) and answers the new one, or a refusal that stores nothing. None when there is no such source.
   */
  readonly changeDestinations: <E>(
    sourceId: string,
    now: number,
    change: (current: ReadonlyArray<Destination>) => Result.Result<ReadonlyArray<Destination>, E>
  ) => Effect.Effect<Option.Option<StoredSource>, StoreError | E>
  /**
   * Removes a destination and dead-letters its pending jobs with `reason`, in one transaction: the jobs it
   * dead-lettered (for the outcomes stream and the usage counters), or none when the source has no such destination.
   * Jobs being delivered finish their run.
   */
  readonly deleteDestination: (
    sourceId: string,
    destinationId: string,
    now: number,
    reason: string
  ) => Effect.Effect<Option.Option<ReadonlyArray<DeadLettered>>, StoreError>
  /**
   * Checks that every stored secret opens with the configured keys, then seals the plain ones (`plain`, at start) or
   * also those under another key than the first (`all`, a re-key), in one transaction; nothing is written on a failure.
   */
  readonly sealSecrets: (scope: SealScope) => Effect.Effect<SealReport, StoreError | SecretKeysError>
}

/** A job a destination's deletion dead-lettered. */
export interface DeadLettered {
  readonly jobId: string
  readonly messageId: string
  readonly kind: JobKind
}

/** Sources: their write keys (looked up by hash, compared in constant time) and destinations. */
export class Sources extends Context.Service<Sources, SourcesShape>()("hookrelay/store/Sources") {}

const hashWriteKey = (writeKey: string): string => createHash("sha256").update(writeKey, "utf8").digest("hex")

const sameSecret = (a: string, b: string): boolean => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && timingSafeEqual(left, right)
}

const decodeWebhooks = Schema.decodeUnknownEffect(WebhookSettings)
const encodeWebhooks = Schema.encodeEffect(WebhookSettings)
const decodeDestinations = Schema.decodeUnknownEffect(Schema.Array(Destination))
const encodeDestinations = Schema.encodeEffect(Schema.Array(Destination))

interface SourceRow {
  readonly id: string
  readonly write_key: string
  readonly webhooks: string | null
  readonly destinations: string | null
  readonly created_at: unknown
  readonly updated_at: unknown
}

const sourceColumns = "id, write_key, webhooks, destinations, created_at, updated_at"

// The column's text is never quoted in an error: once opened it holds secrets.
const readColumn = <A>(
  id: string,
  text: string,
  box: SecretBoxShape,
  decode: (json: unknown) => Effect.Effect<A, unknown>
): Effect.Effect<A, unknown> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: () => new Error(`source "${id}": stored JSON is malformed`)
  }).pipe(
    Effect.flatMap((json) =>
      Effect.mapError(openColumn(json, box), (error) => new Error(`source "${id}": ${error.message}`))
    ),
    Effect.flatMap((json) =>
      Effect.mapError(decode(json), () => new Error(`source "${id}": stored settings do not match their schema`))
    )
  )

/**
 * The destination `webhooks` lives in its own column (as before destinations), the others in `destinations`; their
 * secrets are opened here, on the store's read path only (docs/SECURITY.md).
 */
const readSource = (box: SecretBoxShape) => (row: SourceRow): Effect.Effect<StoredSource, StoreError> =>
  Effect.gen(function*() {
    const webhooks = row.webhooks === null ? undefined : yield* readColumn(row.id, row.webhooks, box, decodeWebhooks)
    const others = row.destinations === null ? [] : yield* readColumn(row.id, row.destinations, box, decodeDestinations)
    const source: StoredSource = {
      id: row.id,
      writeKey: row.write_key,
      destinations: webhooks === undefined ? others : [webhooksDestination(webhooks), ...others],
      ...(webhooks !== undefined && { webhooks }),
      createdAt: num(row.created_at),
      updatedAt: num(row.updated_at)
    }
    return source
  }).pipe(fail("decodeSource"))

/** The two columns of a destination list, their secrets sealed with the box's first key. */
const writeColumns = (box: SecretBoxShape) => (destinations: ReadonlyArray<Destination>) =>
  Effect.gen(function*() {
    const webhooks = webhooksOf(destinations)
    const others = destinations.filter((destination) => destination.id !== webhooksDestinationId)
    return {
      webhooks: webhooks === undefined ? null : JSON.stringify(sealColumn(yield* encodeWebhooks(webhooks), box)),
      destinations: others.length === 0 ? null : JSON.stringify(sealColumn(yield* encodeDestinations(others), box))
    }
  })

/** `box` seals what is written and opens what is read; without a key, values are stored as they are. */
export const make = ({ sql }: StoreKit, box: SecretBoxShape = makeSecretBox([])): SourcesShape => {
  const toSource = readSource(box)
  const toColumns = writeColumns(box)
  /** The stored list changes as `applySourceConfig` says, read and written in one transaction. */
  const upsertSource = Effect.fn("Store.upsertSource")(
    function*(source: SourceConfig, now: number) {
      const hash = hashWriteKey(source.writeKey)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        const taken = yield* sql<{ id: string }>`
          SELECT id FROM sources WHERE write_key_hash = ${hash} AND id <> ${source.id}`
        if (taken.length > 0) {
          return yield* new WriteKeyConflict({ sourceId: source.id, conflictingSourceId: taken[0]!.id })
        }
        const current = yield* sql<SourceRow>`SELECT ${sql.literal(sourceColumns)} FROM sources WHERE id = ${source.id}`
        const stored = current.length === 0 ? [] : (yield* toSource(current[0]!)).destinations
        const columns = yield* toColumns(applySourceConfig(stored, source))
        const rows = yield* sql<SourceRow>`
          INSERT INTO sources (id, write_key, write_key_hash, webhooks, destinations, created_at, updated_at)
          VALUES (${source.id}, ${source.writeKey}, ${hash}, ${columns.webhooks}, ${columns.destinations}, ${now}, ${now})
          ON CONFLICT (id) DO UPDATE SET
            write_key = excluded.write_key,
            write_key_hash = excluded.write_key_hash,
            webhooks = excluded.webhooks,
            destinations = excluded.destinations,
            updated_at = excluded.updated_at
          RETURNING ${sql.literal(sourceColumns)}`
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
        SELECT ${sql.literal(sourceColumns)} FROM sources WHERE id = ${id}`
      return rows.length === 0 ? Option.none() : Option.some(yield* toSource(rows[0]!))
    },
    fail("getSource")
  )

  const findSourceByWriteKey = Effect.fn("Store.findSourceByWriteKey")(
    function*(writeKey: string) {
      const rows = yield* sql<SourceRow>`
        SELECT ${sql.literal(sourceColumns)} FROM sources
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
        SELECT ${sql.literal(sourceColumns)} FROM sources ORDER BY id`
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

  return {
    upsertSource,
    getSource,
    findSourceByWriteKey,
    listSources: () => listSources(),
    deleteSource,
    sealSecrets: (scope) => sealStoredSecrets(sql, box, scope),
    ...makeDestinationWrites(sql, toSource, toColumns)
  }
}

/** One source's destinations changed in place, its row locked (PostgreSQL) between the read and the write. */
const makeDestinationWrites = (
  sql: StoreKit["sql"],
  toSource: ReturnType<typeof readSource>,
  toColumns: ReturnType<typeof writeColumns>
) => {
  const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })

  /** In a transaction: the stored list changed by `change`, written back; none without the source. */
  const rewrite = <E>(
    sourceId: string,
    now: number,
    change: (current: ReadonlyArray<Destination>) => Result.Result<ReadonlyArray<Destination>, E>
  ) =>
    Effect.gen(function*() {
      const current = yield* sql<SourceRow>`
        SELECT ${sql.literal(sourceColumns)} FROM sources WHERE id = ${sourceId} ${lock}`
      if (current.length === 0) return Option.none<Result.Result<StoredSource, E>>()
      const changed = change((yield* toSource(current[0]!)).destinations)
      if (Result.isFailure(changed)) return Option.some(Result.fail(changed.failure))
      const columns = yield* toColumns(changed.success)
      const rows = yield* sql<SourceRow>`
        UPDATE sources SET webhooks = ${columns.webhooks}, destinations = ${columns.destinations}, updated_at = ${now}
        WHERE id = ${sourceId}
        RETURNING ${sql.literal(sourceColumns)}`
      return Option.some(Result.succeed(yield* toSource(rows[0]!)))
    })

  const changeDestinations = <E>(
    sourceId: string,
    now: number,
    change: (current: ReadonlyArray<Destination>) => Result.Result<ReadonlyArray<Destination>, E>
  ): Effect.Effect<Option.Option<StoredSource>, StoreError | E> =>
    sql.withTransaction(rewrite(sourceId, now, change)).pipe(
      fail("changeDestinations"),
      Effect.flatMap(Option.match({
        onNone: () => Effect.succeedNone,
        onSome: Result.match({ onFailure: Effect.fail, onSuccess: Effect.succeedSome })
      })),
      Effect.withSpan("Store.changeDestinations")
    )

  const deleteDestination = Effect.fn("Store.deleteDestination")(
    function*(sourceId: string, destinationId: string, now: number, reason: string) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const removed = yield* rewrite(
          sourceId,
          now,
          (current) =>
            current.some((destination) => destination.id === destinationId)
              ? Result.succeed(current.filter((destination) => destination.id !== destinationId))
              : Result.fail("absent" as const)
        )
        if (Option.isNone(removed) || Result.isFailure(removed.value)) return Option.none<ReadonlyArray<DeadLettered>>()
        // The jobs the source's pending rows carry are made first (migration 21): the deleted destination's among them
        // end below with the others, and a deleted row's other destinations keep theirs.
        yield* sql`UPDATE jobs SET fan_out = NULL WHERE status = 'pending' AND source_id = ${sourceId} AND fan_out IS NOT NULL`
        const dead = yield* sql<{ id: string; message_id: string; kind: string }>`
          UPDATE jobs SET status = 'dead', finished_at = ${now}, last_error = ${reason}
          WHERE source_id = ${sourceId} AND destination_id = ${destinationId} AND status = 'pending'
          RETURNING id, message_id, kind`
        return Option.some(
          dead.map((row): DeadLettered => ({ jobId: row.id, messageId: row.message_id, kind: row.kind as JobKind }))
        )
      }))
    },
    fail("deleteDestination")
  )

  return { changeDestinations, deleteDestination }
}

/**
 * At a store's open: every stored secret must open with the configured keys (else the open fails and nothing is
 * written), then the plain ones an earlier build left are sealed.
 */
export const sealAtOpen = (sources: SourcesShape): Effect.Effect<void, StoreError> =>
  sources.sealSecrets("plain").pipe(
    Effect.tap((report) =>
      report.sealed === 0
        ? Effect.void
        : Effect.logInfo(`sealed ${report.sealed} stored secrets that an earlier version kept as plain text`)
    ),
    Effect.mapError((error) =>
      error._tag === "StoreError" ? error : new StoreError({ operation: "open", cause: error })
    )
  )
