import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"

/** A migration's statements, run one after another in its transaction. */
export const statements = (sql: SqlClient.SqlClient, list: ReadonlyArray<string>) =>
  Effect.forEach(list, (statement) => sql.unsafe(statement), { discard: true })
