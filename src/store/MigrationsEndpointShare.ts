import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"

/**
 * Migration 18: the endpoint state the processes of a PostgreSQL deployment share (`EndpointSharePg`): one circuit
 * row per endpoint that is failing (deleted at its first success, so a healthy endpoint has none) and one rate row
 * per rate-limited endpoint (the next free start instant of its limit). SQLite has one process, whose guards keep
 * this in memory: nothing to make there.
 */
export const endpointShare = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.andThen(
        sql.unsafe(`CREATE TABLE endpoint_circuits (
          source_id TEXT NOT NULL,
          destination_id TEXT NOT NULL,
          url TEXT NOT NULL,
          state TEXT NOT NULL,
          failures INTEGER NOT NULL,
          next_probe_at BIGINT NOT NULL,
          cool_off INTEGER NOT NULL,
          probe_owner TEXT,
          changed_by TEXT,
          PRIMARY KEY (source_id, destination_id, url)
        )`),
        sql.unsafe(`CREATE TABLE endpoint_rates (
          source_id TEXT NOT NULL,
          destination_id TEXT NOT NULL,
          url TEXT NOT NULL,
          next_free_at DOUBLE PRECISION NOT NULL,
          reserved_at DOUBLE PRECISION NOT NULL,
          PRIMARY KEY (source_id, destination_id, url)
        )`)
      ),
    orElse: () => Effect.void
  })
})
