import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

/** SQLite's fan-out trigger, fired by UPDATEs that name `columns`; what it does is the same in migrations 21 and 22. */
const sqliteTrigger = (columns: string) =>
  `CREATE TRIGGER jobs_fan_out AFTER UPDATE OF ${columns} ON jobs
    WHEN OLD.fan_out IS NOT NULL AND (NEW.status <> 'pending' OR NEW.fan_out IS NULL) BEGIN
    INSERT INTO message_bodies (id, body) VALUES (NEW.id, OLD.body);
    INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, body_id, status,
      created_at, next_due_at, message_type, event, trace_parent, log_seq)
    SELECT NEW.id || '.' || (key + 1), NEW.source_id, value, NEW.message_id, NEW.user_id, NEW.kind, X'', NEW.id,
      'pending', NEW.created_at, NEW.created_at, NEW.message_type, NEW.event, NEW.trace_parent, NEW.log_seq
    FROM json_each(OLD.fan_out);
    UPDATE jobs SET body = X'', body_id = NEW.id, fan_out = NULL, fan_out_count = 0 WHERE id = NEW.id;
  END`

/**
 * Migration 21: a message with several destinations is stored as one job row, its first destination's, that carries
 * the others (REFERENCE §1a, "Fan-out"): `fan_out` is the JSON array of their destination ids, `fan_out_count` their
 * number. The body stays in that row. The job of its k-th carried destination has the id `<row id>.<k>` (`CarriedJobs`).
 *
 * The trigger `jobs_fan_out` makes those jobs when the row leaves `pending` (a claim leases it, a destination's
 * deletion ends it) or when its `fan_out` is set to NULL (an explicit "make them now"): each a pending job due at once,
 * with the row's fields, its body moved to `message_bodies` and named by all of them, as ingest stored such messages
 * before. The claim that leased the row then takes them in the same transaction (`SqliteClaim`, `PgClaim`). So ingest
 * writes one row per message whatever its number of destinations; the other rows are made where delivery needs them.
 *
 * `jobs_due` holds `fan_out_count` too: the backlog counts the jobs not yet made from the index alone, and ingest
 * writes no index of its own for them. On SQLite a message id's look-up finds the made jobs through their row's
 * (`message_jobs` names the row; they name it in `body_id`), so making them logs nothing.
 */
export const fanOut = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* statements(sql, [
    `ALTER TABLE jobs ADD COLUMN fan_out TEXT`,
    `ALTER TABLE jobs ADD COLUMN fan_out_count INTEGER NOT NULL DEFAULT 0`,
    `DROP INDEX jobs_due`,
    `CREATE INDEX jobs_due ON jobs (next_due_at, source_id, fan_out_count) WHERE status = 'pending'`
  ])
  yield* sql.onDialectOrElse({
    pg: () =>
      statements(sql, [
        // The trigger's own UPDATE of the row (depth 2) makes nothing: PostgreSQL fires triggers from triggers.
        `CREATE FUNCTION hookrelay_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF pg_trigger_depth() > 1 THEN RETURN NULL; END IF;
          INSERT INTO message_bodies (id, body) VALUES (NEW.id, OLD.body);
          INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, body_id, status,
            created_at, next_due_at, message_type, event, trace_parent, log_seq)
          SELECT NEW.id || '.' || made.k, NEW.source_id, made.destination_id, NEW.message_id, NEW.user_id, NEW.kind,
            ''::bytea, NEW.id, 'pending', NEW.created_at, NEW.created_at, NEW.message_type, NEW.event,
            NEW.trace_parent, NEW.log_seq
          FROM jsonb_array_elements_text(OLD.fan_out::jsonb) WITH ORDINALITY AS made(destination_id, k);
          UPDATE jobs SET body = ''::bytea, body_id = NEW.id, fan_out = NULL, fan_out_count = 0 WHERE id = NEW.id;
          RETURN NULL;
        END $$`,
        `CREATE TRIGGER jobs_fan_out AFTER UPDATE OF status, fan_out ON jobs FOR EACH ROW
          WHEN (OLD.fan_out IS NOT NULL AND (NEW.status <> 'pending' OR NEW.fan_out IS NULL))
          EXECUTE FUNCTION hookrelay_fan_out()`
      ]),
    orElse: () =>
      statements(sql, [
        // SQLite does not fire a trigger from itself (recursive_triggers is off): its own UPDATE makes nothing.
        sqliteTrigger("status, fan_out")
      ])
  })
})

/**
 * Migration 22: on SQLite the fan-out trigger fires for UPDATEs that name `fan_out` only. SQLite runs a row trigger's
 * program (its WHEN inside) for every row a statement that names its columns updates: named on `status`, it ran for
 * every completion, whose rows never carry (bench/NOTES.md, "The fan-out trigger on completions"). So a statement that
 * takes rows out of `pending` names `fan_out`: the claims set it to itself, a destination's deletion sets it to NULL
 * first. PostgreSQL evaluates a trigger's WHEN before it calls the function: its trigger stays as it is.
 */
export const fanOutTriggerOnFanOut = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => Effect.void,
    orElse: () => statements(sql, [`DROP TRIGGER jobs_fan_out`, sqliteTrigger("fan_out")])
  })
})
