import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** The PostgreSQL the tests use (`DATABASE_URL`), or "" when unset. */
export const databaseUrl = process.env.DATABASE_URL ?? ""

/** A plain SQL connection for a test's own checks and clean-up, beside the store under test. */
export interface SqlConnection {
  /** Runs `text` with `$1`, `$2`… bound to `params`; the rows as the driver reads them. */
  readonly query: <Row extends object = any>(
    text: string,
    params?: ReadonlyArray<unknown>
  ) => Promise<{ readonly rows: ReadonlyArray<Row> }>
  readonly end: () => Promise<void>
}

/** The error with PostgreSQL's SQLSTATE (`40P01`…) as `code`, as node-postgres gave it: the driver nests it in causes. */
const withSqlState = (error: Error): Error => {
  for (let cause: unknown = error, depth = 0; cause instanceof Object && depth < 6; depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return Object.assign(error, { code })
    cause = (cause as { cause?: unknown }).cause
  }
  return error
}

/** One connection to `url` (the driver the store uses), open once the promise resolves. */
export const connectSql = async (
  url: string,
  options: { readonly connectTimeout?: Duration.Input } = {}
): Promise<SqlConnection> => {
  const runtime = ManagedRuntime.make(
    PgClient.layer({ url: Redacted.make(url), maxConnections: 1, connectTimeout: options.connectTimeout })
  )
  const query = <Row extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
    runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Row>(text, params)))
      .then((rows) => ({ rows }), (error: Error) => Promise.reject(withSqlState(error)))
  try {
    await query("SELECT 1")
  } catch (error) {
    await runtime.dispose()
    throw error
  }
  return { query, end: () => runtime.dispose() }
}

/** Why PostgreSQL tests cannot run here, or undefined when the server at `DATABASE_URL` answers. */
export const postgresUnavailable = async (): Promise<string | undefined> => {
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) return "DATABASE_URL is not set to a postgres:// URL"
  try {
    const connection = await connectSql(databaseUrl, { connectTimeout: Duration.seconds(3) })
    await connection.end()
    return undefined
  } catch (error) {
    return `PostgreSQL at DATABASE_URL is unreachable (${error instanceof Error ? error.message : String(error)})`
  }
}

/**
 * A fresh schema named after `prefix` and `name`, dropped by the step pushed on `cleanup`, and the `DATABASE_URL` whose
 * sessions work in it (what each server process of a deployment test is given).
 */
export const freshSchema = async (
  prefix: string,
  name: string,
  cleanup: Array<() => Promise<void> | void>
): Promise<{ readonly url: string; readonly schema: string; readonly sql: SqlConnection }> => {
  const schema = `${prefix}_${name}_${process.pid}_${Date.now()}`
  const sql = await connectSql(databaseUrl)
  await sql.query(`CREATE SCHEMA ${schema}`)
  cleanup.push(async () => {
    await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await sql.end()
  })
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return { url: url.toString(), schema, sql }
}
