import pg from "pg"

/** The PostgreSQL the tests use (`DATABASE_URL`), or "" when unset. */
export const databaseUrl = process.env.DATABASE_URL ?? ""

/** Why PostgreSQL tests cannot run here, or undefined when the server at `DATABASE_URL` answers. */
export const postgresUnavailable = async (): Promise<string | undefined> => {
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) return "DATABASE_URL is not set to a postgres:// URL"
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query("SELECT 1")
    return undefined
  } catch (error) {
    return `PostgreSQL at DATABASE_URL is unreachable (${error instanceof Error ? error.message : String(error)})`
  } finally {
    await client.end().catch(() => undefined)
  }
}
