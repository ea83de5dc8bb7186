import { Array as Arr, Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { JobKind, JobStatus } from "./Model.js"
import type { OutboxShape } from "./Outbox.js"
import type { makeJobIds } from "./Rows.js"
import { StoreError } from "./StoreError.js"

/**
 * What every concern module of the store (`Sources`, `Outbox`, `Attempts`, …) is built from: the connection, the
 * connection for long reads, the job id generator, and the one hook the SQLite backend needs when jobs are written
 * outside its hot paths.
 *
 * Multi-row statements are chunked so that no statement binds more than a few thousand parameters (SQLite allows
 * 32 766, PostgreSQL 65 535). Batched updates whose values differ per row pass the rows as one JSON parameter, so
 * their SQL text is constant and prepared once.
 */
export interface StoreKit {
  readonly sql: SqlClient.SqlClient
  /**
   * Reads that need no transaction and can be long (counts, admin lookups): SQLite's read-only connection when there
   * is one (a file store), off the queue every ingest commit waits in; else `sql`. Statements, not fragments:
   * fragments (`sql.in`, `sql.and`, literals) are the same for both and are compiled by the statement that holds them.
   */
  readonly reads: SqlClient.SqlClient
  readonly newJobIds: ReturnType<typeof makeJobIds>
  /** Jobs written through `SqlClient` on SQLite are logged by a trigger (migration 9): the merges are told. */
  readonly noteLogged: Effect.Effect<void>
}

/**
 * The hot transactions, in the one form each backend runs: on SQLite one message to its thread
 * (`sqlite/SqliteStore`), on PostgreSQL the statements of `pg/`.
 */
export interface HotPaths {
  readonly enqueue: OutboxShape["enqueue"]
  readonly claimDue: OutboxShape["claimDue"]
  readonly completeMany: OutboxShape["completeMany"]
  /** Deletes the finished jobs of `status` older than `olderThan` (and their attempts), a chunk at a time. */
  readonly purgeJobs: (
    status: "delivered" | "dead",
    olderThan: number,
    sourceId: string | undefined
  ) => Effect.Effect<number, SqlError>
  /** What ingest saw and has not yet written to the dedupe index goes there first (SQLite's message id log). */
  readonly beforePurgeSeen: Effect.Effect<void, SqlError>
  readonly recoverAbandonedLeases: OutboxShape["recoverAbandonedLeases"]
}

/** Rows per multi-row INSERT: jobs and attempts bind 9 parameters a row. */
export const insertChunk = 500

/**
 * The hot paths are traced as one span per store call; the per-statement `sql.execute` spans inside are turned off:
 * they doubled the cost of a statement and of a transaction.
 */
export const untraced = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.withTracerEnabled(self, false)

/**
 * The span of a hot path on the SQLite thread (a claim or a completion batch): `Effect.fn`'s span without its call-site
 * stack, an `Error` built on every call. An enqueue has none, on either store: it is one per tracking request, and
 * tracking requests are not traced (`Server.ts`); alone, without the request's span, its span was an orphan root.
 */
export const hotSpan = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.withSpan(self, name, { captureStackTrace: false })

/**
 * Maps every failure to a `StoreError` naming the operation. A transaction whose connection is lost dies instead
 * (effect/sql makes a failed ROLLBACK a defect): that is the store failing too, and a caller that retries on a
 * `StoreError` (the dispatcher's completions) must get one rather than be killed by a defect.
 */
export const fail = (operation: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
  Effect.catchDefect(
    Effect.mapError(self, (cause) => new StoreError({ operation, cause })),
    (defect) => isSqlError(defect) ? Effect.fail(new StoreError({ operation, cause: defect })) : Effect.die(defect)
  )

/** Runs `chunk(size)` until it deletes fewer than `size` rows; answers the total. */
export const inChunks = <E>(size: number, chunk: (limit: number) => Effect.Effect<number, E>) =>
  Effect.gen(function*() {
    let total = 0
    while (true) {
      const deleted = yield* chunk(size)
      total += deleted
      if (deleted < size) return total
    }
  })

/** The type of a job's body when the job is not a tracked message: delete notifications and audience identifies. */
export const typeOfKind = (kind: JobKind): string | null =>
  kind === "delete" ? "delete" : kind === "audience" ? "identify" : null

export type JobInsertRow = {
  readonly id: string
  readonly source_id: string
  /** The column's default (the destination `webhooks`) when left out: every row of one insert has it or none does. */
  readonly destination_id?: string
  readonly message_id: string
  readonly user_id: string | null
  readonly kind: JobKind
  readonly body: Uint8Array
  readonly status: JobStatus
  readonly created_at: number
  readonly next_due_at: number
  readonly message_type: string | null
  readonly event: string | null
}

/** Jobs the product makes itself (not ingest's: those go through the hot paths), in multi-row INSERTs. */
export const insertJobRows = (sql: SqlClient.SqlClient, rows: ReadonlyArray<JobInsertRow>) =>
  Effect.forEach(
    Arr.chunksOf(rows, insertChunk),
    (chunk) => sql`INSERT INTO jobs ${sql.insert(chunk)}`,
    { discard: true }
  )
