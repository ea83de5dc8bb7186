import { Context, Effect, Option } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { migrate } from "../Migrations.js"
import type { AttemptRecord, ClaimOptions, CompleteResult, Completion, EnqueueEntry, EnqueueOptions } from "../Model.js"
import { makeJobIds } from "../Rows.js"
import { SecretBox } from "../SecretBox.js"
import { sealAtOpen, Sources } from "../Sources.js"
import type { StoreError } from "../StoreError.js"
import { fail, type HotPaths, hotSpan, inChunks, type StoreKit } from "../StoreKit.js"
import { assemble, type StoreServices } from "../StoreOperations.js"
import * as MessageIdLog from "./MessageIdLog.js"
import { SqliteHotPaths, SqliteReader } from "./SqliteConnection.js"

/** A purge chunk on SQLite's thread: one call, no round trips inside, so an ingest commit waits for one chunk at most. */
const purgeChunkOnThread = 250

const connectionSettings = (sql: SqlClient.SqlClient) =>
  Effect.all([
    // WAL is set by the thread. NORMAL in WAL mode is durable against process crashes and
    // loses at most the last commits on power loss; FULL would fsync every ingest commit.
    sql`PRAGMA synchronous = NORMAL`,
    sql`PRAGMA busy_timeout = 5000`,
    sql`PRAGMA temp_store = MEMORY`,
    // 16 MB of page cache: ingest and claims touch the newest pages; with a large backlog the cache fills and counts
    // against the dispatcher's memory bound.
    sql`PRAGMA cache_size = -16000`,
    // Checkpoint every ~40 MB of WAL instead of every 4 MB: each checkpoint fsyncs twice, and on the ingest path that
    // was the largest share of commit time. The file is truncated back to 64 MB at most after a checkpoint.
    sql`PRAGMA wal_autocheckpoint = 10000`,
    sql`PRAGMA journal_size_limit = 67108864`
  ], { discard: true })

const failEnqueue = fail("enqueue")
const failClaim = fail("claimDue")
const failComplete = fail("completeMany")
const claimSpan = hotSpan("Store.claimDue")
const completeSpan = hotSpan("Store.completeMany")
const nothingCompleted: CompleteResult = { applied: [], refused: [] }

/**
 * The hot paths as whole transactions on SQLite's thread (`SqliteConnection`), each one message. They run no
 * `SqlClient` statement, so there is no inner span to silence: no `untraced` (two fiber-ref writes a call).
 */
const threadHotPaths = (sql: SqlClient.SqlClient, thread: SqliteHotPaths["Service"]): HotPaths => ({
  enqueue: (sourceId: string, entries: ReadonlyArray<EnqueueEntry>, now: number, options?: EnqueueOptions) =>
    failEnqueue(thread.enqueue({ sourceId, entries, now, options })),
  // Sources whose mailbox is full in this dispatcher wait out the claim, so their backlog cannot crowd the others out.
  claimDue: (owner: string, now: number, limit: number, leaseMs: number, options?: ClaimOptions) =>
    claimSpan(failClaim(thread.claim({
      owner,
      now,
      limit,
      leaseMs,
      excludeSourceIds: options?.excludeSourceIds ?? [],
      expired: options?.expired !== false
    }))),
  completeMany: (owner: string, completions: ReadonlyArray<Completion>, attempts?: ReadonlyArray<AttemptRecord>) =>
    completions.length === 0 && (attempts === undefined || attempts.length === 0)
      ? Effect.succeed(nothingCompleted)
      : completeSpan(failComplete(thread.complete({ owner, completions, attempts: attempts ?? [] }))),
  // Each chunk is one call, and the lock is held only to send it: an ingest commit waits for at most the chunk's own
  // run (`bench/support/retentionStall.ts`).
  purgeJobs: (status, olderThan, sourceId) =>
    inChunks(purgeChunkOnThread, (limit) => thread.purge({ status, olderThan, sourceId, limit })),
  beforePurgeSeen: Effect.asVoid(MessageIdLog.mergeAll(thread)),
  // The file belongs to one process at a time, so at start every lease is a dead process's.
  recoverAbandonedLeases: Effect.fn("Store.recoverAbandonedLeases")(
    function*() {
      const recovered = yield* sql<{ id: string }>`
        UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
        WHERE status = 'delivering'
        RETURNING id`
      return recovered.length
    },
    fail("recoverAbandonedLeases")
  )
})

/**
 * The store on SQLite: the `SqlClient` and hot paths of the store's thread (`SqliteConnection.layer`), and its
 * read-only connection when there is one. Applies the connection settings, runs the migrations, and returns the
 * services.
 */
export const make: Effect.Effect<Context.Context<StoreServices>, StoreError, SqlClient.SqlClient | SqliteHotPaths> =
  Effect.gen(
    function*() {
      const sql = yield* SqlClient.SqlClient
      const thread = yield* SqliteHotPaths
      const reads = Option.getOrElse(yield* Effect.serviceOption(SqliteReader), () => sql)
      yield* connectionSettings(sql).pipe(fail("open"))
      yield* migrate.pipe(fail("migrate"))
      const kit: StoreKit = { sql, reads, newJobIds: makeJobIds(), noteLogged: thread.noteLogged }
      const services = assemble(kit, () => threadHotPaths(sql, thread), yield* SecretBox)
      yield* sealAtOpen(Context.get(services, Sources))
      return services
    }
  )
