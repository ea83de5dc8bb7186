import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

/**
 * Migration 20: the message log keyed by `(source_id, seq)`, the order its listings read it, instead of by `seq` with
 * an index `(source_id, seq)` beside it: an accepted message writes one b-tree, not two (SQLite: a WITHOUT ROWID
 * table; PostgreSQL: the primary key, seq still its identity). On SQLite `seq` no longer comes from the rowid (which
 * SQLite gives again once the newest row is deleted): `message_log_seq` keeps the last one given, so a job's
 * `log_seq` never comes to name another message.
 */
export const messageLogBySource = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      statements(sql, [
        `ALTER TABLE message_log DROP CONSTRAINT message_log_pkey`,
        `DROP INDEX message_log_source`,
        `ALTER TABLE message_log ADD PRIMARY KEY (source_id, seq)`
      ]),
    orElse: () =>
      statements(sql, [
        // Copied aside and back, not renamed: ALTER TABLE RENAME opens the connection's temporary database, after which
        // `PRAGMA temp_store` inside a transaction is refused (see `MigrationsPerDestination`).
        `CREATE TABLE message_log_before AS SELECT * FROM message_log`,
        `DROP TABLE message_log`,
        `CREATE TABLE message_log (
          source_id TEXT NOT NULL,
          seq INTEGER NOT NULL,
          message_id TEXT NOT NULL,
          received_at BIGINT NOT NULL,
          type TEXT,
          event TEXT,
          user_id TEXT,
          anonymous_id TEXT,
          job_count INTEGER NOT NULL,
          PRIMARY KEY (source_id, seq)
        ) WITHOUT ROWID`,
        `INSERT INTO message_log (source_id, seq, message_id, received_at, type, event, user_id, anonymous_id, job_count)
          SELECT source_id, seq, message_id, received_at, type, event, user_id, anonymous_id, job_count
          FROM message_log_before`,
        `CREATE TABLE message_log_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last BIGINT NOT NULL)`,
        // Above every seq a row or a job holds: a job may outlive its message's row (retention cuts them apart).
        `INSERT INTO message_log_seq (id, last)
          SELECT 1, max(coalesce((SELECT max(seq) FROM message_log_before), 0), coalesce(max(log_seq), 0)) FROM jobs`,
        `DROP TABLE message_log_before`
      ])
  })
})
