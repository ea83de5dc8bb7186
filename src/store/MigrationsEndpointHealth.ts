import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"

/**
 * Migration 12, endpoint health: the URLs disabled (by a 410, a long run without success, or an operator), shared by
 * every process; and the attempts by URL and time, which the health page's hour and day statistics read.
 */
export const endpointHealth = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(
    `CREATE TABLE disabled_endpoints (url TEXT PRIMARY KEY, disabled_at BIGINT NOT NULL, reason TEXT NOT NULL)`
  )
  yield* sql.unsafe(`CREATE INDEX attempts_url_started ON attempts (url, started_at)`)
})
