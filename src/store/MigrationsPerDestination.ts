import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

const usageColumns = `
  api_calls BIGINT NOT NULL DEFAULT 0,
  messages BIGINT NOT NULL DEFAULT 0,
  filtered BIGINT NOT NULL DEFAULT 0,
  delivered BIGINT NOT NULL DEFAULT 0,
  dead BIGINT NOT NULL DEFAULT 0,
  latency_ms BIGINT NOT NULL DEFAULT 0,
  latency_jobs BIGINT NOT NULL DEFAULT 0`

/**
 * SQLite cannot change a primary key: both tables are made again and their rows copied back. Not through ALTER TABLE
 * RENAME, which opens the connection's temporary database: a later `PRAGMA temp_store` (the message id merge's) inside
 * a transaction is then refused.
 */
const sqliteTables = [
  `CREATE TABLE usage_daily_before AS SELECT * FROM usage_daily`,
  `DROP TABLE usage_daily`,
  `CREATE TABLE usage_daily (
    source_id TEXT NOT NULL,
    day INTEGER NOT NULL,
    destination_id TEXT NOT NULL DEFAULT '',${usageColumns},
    PRIMARY KEY (source_id, day, destination_id)
  ) WITHOUT ROWID`,
  `INSERT INTO usage_daily (source_id, day, destination_id, api_calls, messages, filtered)
    SELECT source_id, day, '', api_calls, messages, filtered FROM usage_daily_before
    WHERE api_calls <> 0 OR messages <> 0 OR filtered <> 0`,
  `INSERT INTO usage_daily (source_id, day, destination_id, delivered, dead, latency_ms, latency_jobs)
    SELECT source_id, day, 'webhooks', delivered, dead, latency_ms, latency_jobs FROM usage_daily_before
    WHERE delivered <> 0 OR dead <> 0 OR latency_jobs <> 0`,
  `DROP TABLE usage_daily_before`,
  `CREATE TABLE deletion_notifications_before AS SELECT * FROM deletion_notifications`,
  `DROP TABLE deletion_notifications`,
  `CREATE TABLE deletion_notifications (
    deletion_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    destination_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    PRIMARY KEY (deletion_id, source_id, destination_id)
  ) WITHOUT ROWID`,
  `INSERT INTO deletion_notifications (deletion_id, source_id, destination_id, job_id)
    SELECT deletion_id, source_id, 'webhooks', job_id FROM deletion_notifications_before`,
  `DROP TABLE deletion_notifications_before`
]

/**
 * PostgreSQL changes the keys in place (the usage rows keep their shards, migration 6). A row stored before counted
 * the source's calls and messages and the jobs of the `webhooks` object, the only destination there was: its job
 * counters move to a row of destination `webhooks`, as on SQLite.
 */
const pgTables = [
  `ALTER TABLE usage_daily ADD COLUMN destination_id TEXT NOT NULL DEFAULT ''`,
  `ALTER TABLE usage_daily DROP CONSTRAINT usage_daily_pkey`,
  `ALTER TABLE usage_daily ADD PRIMARY KEY (source_id, day, destination_id, shard)`,
  `INSERT INTO usage_daily (source_id, day, destination_id, shard, delivered, dead, latency_ms, latency_jobs)
    SELECT source_id, day, 'webhooks', shard, delivered, dead, latency_ms, latency_jobs FROM usage_daily
    WHERE delivered <> 0 OR dead <> 0 OR latency_jobs <> 0`,
  `UPDATE usage_daily SET delivered = 0, dead = 0, latency_ms = 0, latency_jobs = 0 WHERE destination_id = ''`,
  `ALTER TABLE deletion_notifications ADD COLUMN destination_id TEXT NOT NULL DEFAULT 'webhooks'`,
  `ALTER TABLE deletion_notifications ALTER COLUMN destination_id DROP DEFAULT`,
  `ALTER TABLE deletion_notifications DROP CONSTRAINT deletion_notifications_pkey`,
  `ALTER TABLE deletion_notifications ADD PRIMARY KEY (deletion_id, source_id, destination_id)`
]

/**
 * What is counted and notified per destination (REFERENCE §5, §11), on both databases:
 * - `usage_daily.destination_id`: `delivered`, `dead` and the latency sums are a destination's jobs, counted in the
 *   rows of (source, day, destination); the source's own counters (`api_calls`, `messages`, `filtered`) in its row of
 *   destination `''`. The source's day is the sum of its rows. In the key after the day: a source's days are one
 *   range of the key, its destinations' rows within it.
 * - `deletion_notifications.destination_id`: a delete notice is one job per destination. Notices recorded before were
 *   the `webhooks` object's, which is the destination `webhooks`.
 */
export const perDestination = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, sql.onDialectOrElse({ pg: () => pgTables, orElse: () => sqliteTables }))
})
