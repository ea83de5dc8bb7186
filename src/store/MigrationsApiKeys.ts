import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { statements } from "./MigrationStatements.js"

/**
 * Migration 17: the admin API's keys and its audit log, on both databases.
 * - `api_keys`: a key is stored as the SHA-256 of its text (`key_hash`, unique: the look-up of a bearer token), never
 *   the text; `scopes` and `source_ids` are JSON arrays (`source_ids` NULL: every source). A revoked key keeps its row.
 * - `audit_log`: one row per admin write, newest the highest id; the id is the page cursor. No body is ever kept.
 */
export const apiKeys = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serialKey = sql.onDialectOrElse({
    pg: () => "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    orElse: () => "INTEGER PRIMARY KEY"
  })
  const tables = [
    `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        key_hash TEXT NOT NULL,
        scopes TEXT NOT NULL,
        source_ids TEXT,
        created_at BIGINT NOT NULL,
        last_used_at BIGINT,
        revoked_at BIGINT
      )`,
    `CREATE UNIQUE INDEX api_keys_hash ON api_keys (key_hash)`,
    `CREATE TABLE audit_log (
        id ${serialKey},
        at BIGINT NOT NULL,
        key_id TEXT,
        key_name TEXT NOT NULL,
        method TEXT NOT NULL,
        route TEXT NOT NULL,
        path TEXT NOT NULL,
        source_id TEXT,
        destination_id TEXT,
        address TEXT,
        status INTEGER NOT NULL
      )`
  ]
  yield* statements(sql, tables)
})
