import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

/**
 * Migration 19: the operator's message log (REFERENCE §12).
 * - `message_log`: one row per accepted message, filtered ones included (`job_count` 0), written by ingest in the
 *   transaction of its jobs. `seq` grows with every append (SQLite: the rowid, so an append writes the last page);
 *   listings walk it backwards. `(source_id, seq)` is its one index: per source, an append lands at that source's end.
 * - `jobs.log_seq`: the log row of a job's message, written with the job (no index): a listing that starts from jobs
 *   (the dead ones) reads their messages' rows by primary key. NULL for jobs stored before.
 * - `jobs_dead_by_id`: the dead jobs of a source newest first (ids begin with their creation time). Jobs are born
 *   pending, so only a job that dies writes it: ingest pays nothing for it.
 */
export const messageLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const seq = sql.onDialectOrElse({
    pg: () => "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    orElse: () => "INTEGER PRIMARY KEY"
  })
  const list = [
    `CREATE TABLE message_log (
      seq ${seq},
      source_id TEXT NOT NULL,
      message_id TEXT NOT NULL,
      received_at BIGINT NOT NULL,
      type TEXT,
      event TEXT,
      user_id TEXT,
      anonymous_id TEXT,
      job_count INTEGER NOT NULL
    )`,
    `CREATE INDEX message_log_source ON message_log (source_id, seq)`,
    `ALTER TABLE jobs ADD COLUMN log_seq BIGINT`,
    `CREATE INDEX jobs_dead_by_id ON jobs (source_id, id) WHERE status = 'dead'`
  ]
  yield* statements(sql, list)
})
