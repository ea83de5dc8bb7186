import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"

/**
 * Migration 16: the settings version the processes of a PostgreSQL deployment share (`pg/PgSettingsVersion`), one
 * row bumped by every admin write. SQLite has one process, whose version lives in memory: nothing to make there.
 */
export const settingsVersion = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.andThen(
        sql.unsafe(`CREATE TABLE settings_version (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`),
        sql.unsafe(`INSERT INTO settings_version (id, version) VALUES (1, 0)`)
      ),
    orElse: () => Effect.void
  })
})
