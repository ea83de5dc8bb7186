import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

/**
 * Destinations (REFERENCE §1a), on both databases:
 * - `sources.destinations`: the source's destinations other than `webhooks`, as JSON. The `webhooks` column keeps the
 *   destination `webhooks` as it always did, so a source stored before needs no rewrite.
 * - `jobs.destination_id`: the destination a job delivers to. Every job stored before was for the `webhooks` object,
 *   which is the destination `webhooks`: the default says so without rewriting a row (a constant default is metadata
 *   in both databases). Dead letters and attempts are jobs' and reach their destination through them.
 * - `message_bodies`: the body of a message that has several jobs, stored once; each of its jobs names it
 *   (`jobs.body_id`, its first job's id) and keeps an empty `body`. A message with one job keeps its body in the job,
 *   as before. The partial index finds a body's jobs when one is deleted, and the trigger drops the body with its last
 *   job, whichever path deletes it (retention, dead-letter purges, deletion requests).
 */
export const destinations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const blob = sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" })
  yield* statements(sql, [
    `ALTER TABLE sources ADD COLUMN destinations TEXT`,
    `ALTER TABLE jobs ADD COLUMN destination_id TEXT NOT NULL DEFAULT 'webhooks'`,
    `ALTER TABLE jobs ADD COLUMN body_id TEXT`,
    `CREATE TABLE message_bodies (id TEXT PRIMARY KEY, body ${blob} NOT NULL)`,
    `CREATE INDEX jobs_body ON jobs (body_id) WHERE body_id IS NOT NULL`
  ])
  yield* sql.onDialectOrElse({
    pg: () =>
      statements(sql, [
        `CREATE FUNCTION hookrelay_drop_message_body() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          DELETE FROM message_bodies WHERE id = OLD.body_id
            AND NOT EXISTS (SELECT 1 FROM jobs WHERE body_id = OLD.body_id);
          RETURN NULL;
        END $$`,
        `CREATE TRIGGER jobs_body_dropped AFTER DELETE ON jobs
          FOR EACH ROW WHEN (OLD.body_id IS NOT NULL) EXECUTE FUNCTION hookrelay_drop_message_body()`
      ]),
    orElse: () =>
      statements(sql, [
        `CREATE TRIGGER jobs_body_dropped AFTER DELETE ON jobs WHEN OLD.body_id IS NOT NULL BEGIN
          DELETE FROM message_bodies WHERE id = OLD.body_id
            AND NOT EXISTS (SELECT 1 FROM jobs WHERE body_id = OLD.body_id);
        END`
      ])
  })
})
