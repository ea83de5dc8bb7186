import { Effect } from "effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { apiKeys } from "./MigrationsApiKeys.js"
import { destinations } from "./MigrationsDestinations.js"
import { endpointHealth } from "./MigrationsEndpointHealth.js"
import { endpointKeys } from "./MigrationsEndpointKeys.js"
import { endpointShare } from "./MigrationsEndpointShare.js"
import { fanOut, fanOutTriggerOnFanOut } from "./MigrationsFanOut.js"
import { messageLog } from "./MigrationsMessageLog.js"
import { messageLogBySource } from "./MigrationsMessageLogBySource.js"
import { perDestination } from "./MigrationsPerDestination.js"
import { settingsVersion } from "./MigrationsSettingsVersion.js"
import { statements } from "./MigrationStatements.js"

/**
 * The schema, shared by SQLite and PostgreSQL. Differences go through `sql.onDialectOrElse`:
 * BLOB vs bytea, integer ids, WITHOUT ROWID for the composite-key tables on SQLite.
 *
 * Times are epoch milliseconds (BIGINT). Indexes serve the hot queries only:
 * - claim: pending jobs by due time, delivering jobs by lease expiry (partial indexes, so a
 *   delivered backlog of millions costs the claim nothing);
 * - dedupe: the (source_id, message_id) primary key of seen_messages;
 * - admin and retention: jobs by message id, dead letters by source and time, delivered by time.
 * SQLite keeps its index by message id apart from the jobs since migration 9 (`message_id_log`, `message_jobs`).
 */

/** The column and table words that differ between the dialects. */
interface Dialect {
  readonly blob: string
  readonly serialKey: string
  readonly withoutRowid: string
}

const dialectOf = (sql: SqlClient.SqlClient): Dialect => ({
  blob: sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" }),
  serialKey: sql.onDialectOrElse({
    pg: () => "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    orElse: () => "INTEGER PRIMARY KEY"
  }),
  withoutRowid: sql.onDialectOrElse({ sqlite: () => " WITHOUT ROWID", orElse: () => "" })
})

/** Sources, their jobs and the jobs' attempts: what ingest and delivery write. */
const deliveryTables = ({ blob, serialKey }: Dialect): ReadonlyArray<string> => [
  `CREATE TABLE sources (
      id TEXT PRIMARY KEY,
      write_key TEXT NOT NULL,
      write_key_hash TEXT NOT NULL,
      webhooks TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
  `CREATE UNIQUE INDEX sources_write_key_hash ON sources (write_key_hash)`,

  `CREATE TABLE jobs (
      id TEXT PRIMARY KEY,
      source_id TEXT NOT NULL,
      message_id TEXT NOT NULL,
      user_id TEXT,
      kind TEXT NOT NULL,
      body ${blob} NOT NULL,
      status TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      first_attempt_at BIGINT,
      next_due_at BIGINT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      endpoint_state TEXT,
      lease_owner TEXT,
      lease_expires_at BIGINT,
      finished_at BIGINT,
      last_error TEXT
    )`,
  `CREATE INDEX jobs_due ON jobs (next_due_at) WHERE status = 'pending'`,
  `CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE status = 'delivering'`,
  `CREATE INDEX jobs_message ON jobs (message_id)`,
  `CREATE INDEX jobs_delivered ON jobs (finished_at) WHERE status = 'delivered'`,
  `CREATE INDEX jobs_dead ON jobs (source_id, finished_at) WHERE status = 'dead'`,

  `CREATE TABLE attempts (
      id ${serialKey},
      job_id TEXT NOT NULL,
      url TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      started_at BIGINT NOT NULL,
      duration_ms INTEGER NOT NULL,
      status_code INTEGER,
      error TEXT,
      outcome TEXT NOT NULL,
      response_snippet TEXT
    )`,
  `CREATE INDEX attempts_job ON attempts (job_id)`
]

/** Dedupe's seen message ids and the daily usage counters. */
const ledgerTables = ({ withoutRowid }: Dialect): ReadonlyArray<string> => [
  `CREATE TABLE seen_messages (
      source_id TEXT NOT NULL,
      message_id TEXT NOT NULL,
      seen_at BIGINT NOT NULL,
      PRIMARY KEY (source_id, message_id)
    )${withoutRowid}`,
  `CREATE INDEX seen_messages_seen_at ON seen_messages (seen_at)`,

  // Per source, per UTC day (day = floor(epoch ms / 86 400 000)).
  `CREATE TABLE usage_daily (
      source_id TEXT NOT NULL,
      day INTEGER NOT NULL,
      api_calls BIGINT NOT NULL DEFAULT 0,
      messages BIGINT NOT NULL DEFAULT 0,
      filtered BIGINT NOT NULL DEFAULT 0,
      delivered BIGINT NOT NULL DEFAULT 0,
      dead BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (source_id, day)
    )${withoutRowid}`
]

/** Tables reserved for deletion requests, audiences and computed traits. */
const reservedTables = ({ withoutRowid }: Dialect): ReadonlyArray<string> => [
  // Reserved for deletion requests (REFERENCE §5): the request, and one delete job per source.
  `CREATE TABLE deletion_requests (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL,
      source_ids TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      jobs_removed INTEGER NOT NULL DEFAULT 0
    )`,
  `CREATE TABLE deletion_notifications (
      deletion_id TEXT NOT NULL,
      source_id TEXT NOT NULL,
      job_id TEXT NOT NULL,
      PRIMARY KEY (deletion_id, source_id)
    )${withoutRowid}`,

  // Reserved for audiences (REFERENCE §6): the current membership of each audience.
  `CREATE TABLE audiences (
      source_id TEXT NOT NULL,
      audience TEXT NOT NULL,
      property TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      synced_at BIGINT NOT NULL,
      PRIMARY KEY (source_id, audience)
    )${withoutRowid}`,
  `CREATE TABLE audience_members (
      source_id TEXT NOT NULL,
      audience TEXT NOT NULL,
      user_id TEXT NOT NULL,
      added_at BIGINT NOT NULL,
      PRIMARY KEY (source_id, audience, user_id)
    )${withoutRowid}`,

  // Reserved for computed traits: the last value sent per user and trait.
  `CREATE TABLE computed_traits (
      source_id TEXT NOT NULL,
      user_id TEXT NOT NULL,
      trait TEXT NOT NULL,
      value TEXT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (source_id, user_id, trait)
    )${withoutRowid}`
]

const initial = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const dialect = dialectOf(sql)
  yield* statements(sql, [...deliveryTables(dialect), ...ledgerTables(dialect), ...reservedTables(dialect)])
})

/**
 * PostgreSQL: the jobs and seen tables churn like a queue (every job is inserted, updated twice,
 * and purged), so the default autovacuum thresholds (20 % of the table) leave the claim query
 * planned from stale statistics — a bitmap scan and sort of every due row instead of the partial
 * index in due order — and dead index entries pile up.
 * Vacuum and analyze them after 1 % changes instead. SQLite needs nothing here.
 */
const queueTableTuning = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      statements(sql, [
        `ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01)`,
        `ALTER TABLE seen_messages SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01)`
      ]),
    orElse: () => Effect.void
  })
})

/**
 * The due index also carries source_id, so a claim that leaves some sources out (their mailbox
 * is full) skips their rows inside the index instead of reading each row, which a large backlog
 * of an excluded source ahead of the others would make the claim pay for.
 */
const dueIndexWithSource = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [
    `DROP INDEX jobs_due`,
    `CREATE INDEX jobs_due ON jobs (next_due_at, source_id) WHERE status = 'pending'`
  ])
})

/**
 * Deletion requests and audience syncs (REFERENCE §5, §6):
 * - `jobs_user`: a deletion finds one user's jobs through it instead of reading the whole outbox.
 *   Partial (`user_id IS NOT NULL`): anonymous messages cost it nothing; both databases use it for
 *   `user_id = ?`. Dropped by migration 8.
 * - `audiences.sync_owner` / `sync_expires_at`: the lease that keeps two syncs of one audience —
 *   from any process sharing the database — from interleaving their chunks.
 * - `audiences_property`: one audience per property name and source. The table was reserved and
 *   unused before this migration, so the unique index cannot meet existing duplicates.
 */
const deletionsAndAudienceSync = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [
    `CREATE INDEX jobs_user ON jobs (user_id) WHERE user_id IS NOT NULL`,
    `ALTER TABLE audiences ADD COLUMN sync_owner TEXT`,
    `ALTER TABLE audiences ADD COLUMN sync_expires_at BIGINT`,
    // Two audiences of one source must not be sent as the same property (they would overwrite each other).
    `CREATE UNIQUE INDEX audiences_property ON audiences (source_id, property)`
  ])
})

/**
 * The web console's message log and latency chart (REFERENCE §11, §12):
 * - `jobs.message_type` / `jobs.event`: what the message was, kept with its job because the body
 *   of a delivered job is emptied. Nullable, no default: adding them rewrites nothing in either
 *   database; jobs stored before stay without them.
 * - `usage_daily.latency_ms` / `latency_jobs`: the sum of (delivered − received) and the jobs it
 *   sums, added by the completion that counts `delivered`. The count of its own keeps the mean
 *   right on the day of the upgrade, whose earlier deliveries have no latency.
 */
const messageLogAndLatency = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [
    `ALTER TABLE jobs ADD COLUMN message_type TEXT`,
    `ALTER TABLE jobs ADD COLUMN event TEXT`,
    `ALTER TABLE usage_daily ADD COLUMN latency_ms BIGINT NOT NULL DEFAULT 0`,
    `ALTER TABLE usage_daily ADD COLUMN latency_jobs BIGINT NOT NULL DEFAULT 0`
  ])
})

/**
 * PostgreSQL: a source's usage row of the day was updated by every ingest commit and every completion batch, and its
 * row lock held to each one's COMMIT, a round trip to a busy client later: under steady load most sessions of the
 * pool waited for that lock (`Lock:transactionid`; bench/NOTES.md, "The store"). Usage rows get a shard, the
 * transactions take turns over the shards, and reads add them up. SQLite runs one transaction at a time: its rows
 * stay one per source and day.
 */
export const usageShards = 16

const usageShardsMigration = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      statements(sql, [
        `ALTER TABLE usage_daily ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0`,
        `ALTER TABLE usage_daily DROP CONSTRAINT usage_daily_pkey`,
        `ALTER TABLE usage_daily ADD PRIMARY KEY (source_id, day, shard)`
      ]),
    orElse: () => Effect.void
  })
})

/**
 * Pending jobs by source, for the claim that leaves some sources out (their mailbox is full). Through the due index
 * it walked every due row of the left-out sources to find the others' (on SQLite each such claim held up every ingest
 * commit queued behind it on the one connection; bench/NOTES.md, "Claims seek per source"). With this index the
 * claim takes each other source's earliest due jobs with one seek per source (`sqlite/SqliteClaim`, `pg/PgClaim`).
 */
const pendingBySource = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [`CREATE INDEX jobs_pending_source ON jobs (source_id, next_due_at) WHERE status = 'pending'`])
})

/**
 * No index by user. `jobs_user` cost every ingest more than the rest of the outbox's indexes together: the jobs of one
 * request belong to many users, each user's entries sit together in the index, so each job's entry lands on a page of
 * its own and a commit rewrites one index page per job (bench/NOTES.md, "No index by user"). What read through it
 * now reads through the status indexes: a deletion (REFERENCE §5) removes pending and dead jobs, which
 * `jobs_pending_source` / `jobs_due` and `jobs_dead` hold, so it reads the sources' backlog and dead letters, not the
 * delivered history; the console's search by user walks the jobs newest first until it has what it shows.
 */
const noUserIndex = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [`DROP INDEX IF EXISTS jobs_user`])
})

/**
 * SQLite: the two indexes keyed by message id — dedupe's `seen_messages` and the admin look-up's `jobs_message` — are
 * no longer written by ingest. With random message ids (Segment's Python, Go, Ruby, Java and mobile libraries send
 * UUIDs) each job's entry landed on a page of its own in each, and a commit wrote those pages (bench/NOTES.md, "The
 * message id log and the edge rule").
 * - `message_id_log`: what ingest adds, in arrival order (a rowid table: appending writes the last page only): a row
 *   per message whose id would land inside an index rather than at its end (`SqliteTransactions`: time-ordered ids
 *   are written to the indexes at once), and per job the product makes itself (audiences, deletions: the trigger
 *   below, as narrowed by migration 10). `dedupe` marks what the 24 h dedupe counts (ingest's messages, with a job or
 *   filtered), `job_id` what the look-up needs.
 * - `message_jobs`: the jobs of a message id, for the admin look-up (it replaces `jobs_message`).
 * - The log is merged into `seen_messages` and `message_jobs` in the background (`MessageIdLog`), sorted by key, many
 *   thousand rows at a time: a page then takes many entries at once. Until then, the SQLite thread answers dedupe from
 *   memory (`RecentMessageIds`) and the look-ups read the log too.
 * PostgreSQL keeps writing both indexes at ingest: several processes dedupe there, through the primary key's locks.
 */
const messageIdLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    sqlite: () =>
      statements(sql, [
        `CREATE TABLE message_id_log (
          source_id TEXT NOT NULL,
          message_id TEXT NOT NULL,
          seen_at BIGINT NOT NULL,
          job_id TEXT,
          dedupe INTEGER NOT NULL
        )`,
        `CREATE TABLE message_jobs (
          message_id TEXT NOT NULL,
          job_id TEXT NOT NULL,
          source_id TEXT NOT NULL,
          PRIMARY KEY (message_id, job_id)
        ) WITHOUT ROWID`,
        `INSERT INTO message_jobs (message_id, job_id, source_id) SELECT message_id, id, source_id FROM jobs
          ORDER BY message_id, id`,
        `DROP INDEX jobs_message`,
        `CREATE TRIGGER jobs_logged AFTER INSERT ON jobs BEGIN
          INSERT INTO message_id_log (source_id, message_id, seen_at, job_id, dedupe)
          VALUES (NEW.source_id, NEW.message_id, NEW.created_at, NEW.id, NEW.kind = 'message');
        END`,
        `CREATE TRIGGER jobs_unlogged AFTER DELETE ON jobs BEGIN
          DELETE FROM message_jobs WHERE message_id = OLD.message_id AND job_id = OLD.id;
        END`
      ]),
    orElse: () => Effect.void
  })
})

/**
 * SQLite: migration 9's `jobs_logged` trigger, as first shipped, logged every job inserted, ingest's too. Ingest now
 * writes its own rows: the index entry at once for an id beyond the index's greatest (time-ordered ids), a log row
 * only for the others (`SqliteTransactions`). Left in place, the old trigger would log every ingested job a second
 * time, and the merges would write what the edge already wrote. The trigger keeps the jobs the product makes itself
 * (audiences, deletions), which ingest does not write.
 */
const jobsLoggedOfTheProductOnly = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    sqlite: () =>
      statements(sql, [
        `DROP TRIGGER jobs_logged`,
        `CREATE TRIGGER jobs_logged AFTER INSERT ON jobs WHEN NEW.kind <> 'message' BEGIN
          INSERT INTO message_id_log (source_id, message_id, seen_at, job_id, dedupe)
          VALUES (NEW.source_id, NEW.message_id, NEW.created_at, NEW.id, 0);
        END`
      ]),
    orElse: () => Effect.void
  })
})

/** The W3C `traceparent` of the tracking request that made a job (telemetry on): NULL otherwise, so it costs nothing. */
const jobTraceContext = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`ALTER TABLE jobs ADD COLUMN trace_parent TEXT`)
})

export const migrationsTable = "hookrelay_migrations"

/** Every migration, by name (applied in the order of their numbers). */
export const migrations = {
  "1_initial": initial,
  "2_queue_table_tuning": queueTableTuning,
  "3_due_index_with_source": dueIndexWithSource,
  "4_deletions_and_audience_sync": deletionsAndAudienceSync,
  "5_message_log_and_latency": messageLogAndLatency,
  "6_usage_shards": usageShardsMigration,
  "7_pending_by_source": pendingBySource,
  "8_no_user_index": noUserIndex,
  "9_message_id_log": messageIdLog,
  "10_jobs_logged_of_the_product_only": jobsLoggedOfTheProductOnly,
  "11_job_trace_context": jobTraceContext,
  "12_endpoint_health": endpointHealth,
  "13_destinations": destinations,
  "14_endpoint_keys": endpointKeys,
  "15_per_destination": perDestination,
  "16_settings_version": settingsVersion,
  "17_api_keys": apiKeys,
  "18_endpoint_share": endpointShare,
  "19_message_log": messageLog,
  "20_message_log_by_source": messageLogBySource,
  "21_fan_out": fanOut,
  "22_fan_out_trigger_on_fan_out": fanOutTriggerOnFanOut
}

/** Applies the pending migrations (inside one transaction; PostgreSQL locks the migrations table). */
export const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: migrationsTable })
