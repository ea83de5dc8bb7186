import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Layer, type Scope } from "effect"
import { createRequire } from "node:module"

/** The part of better-sqlite3's API used here (the package ships no types of its own). */
export interface Database {
  readonly prepare: (sql: string) => PreparedStatement
  readonly pragma: (source: string) => unknown
  readonly transaction: <F extends (...args: Array<any>) => any>(fn: F) => F
  readonly close: () => void
}

export interface PreparedStatement {
  readonly reader: boolean
  readonly all: (...params: ReadonlyArray<unknown>) => Array<any>
  readonly run: (...params: ReadonlyArray<unknown>) => { readonly changes: number; readonly lastInsertRowid: unknown }
  readonly raw: (on: boolean) => PreparedStatement
}

/**
 * The store's SQLite connection itself, for the hot paths that run a whole transaction in one
 * synchronous call. Each statement through `SqlClient` costs the Effect machinery around it (measured
 * ≈ 38 KB allocated and tens of µs per statement, ≈ 80 KB for a transaction around one SELECT): an
 * ingest transaction of five statements allocated ≈ 200 KB, whose young-generation collections are
 * pauses of the event loop. `use` runs `f` on the connection while it holds the same lock as
 * `SqlClient`'s statements and transactions, so nothing interleaves with it. Never call it inside a
 * `sql.withTransaction` (that transaction holds the lock).
 */
export class RawSqlite extends Context.Tag("hookrelay/RawSqlite")<RawSqlite, {
  readonly use: <A>(f: (db: Database) => A) => Effect.Effect<A, SqlError>
}>() {}

/**
 * better-sqlite3 as `@effect/sql-sqlite-node` loads it: resolved from that package, which depends on
 * it (hookrelay does not directly).
 */
export const loadDriver = (): { readonly path: string; readonly Database: new(filename: string) => Database } => {
  const fromSqlite = createRequire(createRequire(import.meta.url).resolve("@effect/sql-sqlite-node"))
  const path = fromSqlite.resolve("better-sqlite3")
  return { path, Database: fromSqlite(path) }
}

/** How many prepared statements are kept (by SQL text); the oldest goes first. */
const prepareCacheSize = 200

/**
 * One better-sqlite3 connection (WAL) as a `SqlClient`, built as `@effect/sql-sqlite-node`'s
 * `SqliteClient` builds it (statements run synchronously on the event loop behind a one-permit
 * semaphore), plus `RawSqlite` over the same connection and lock.
 */
export const make = (filename: string): Effect.Effect<
  { readonly sql: SqlClient.SqlClient; readonly raw: RawSqlite["Type"] },
  SqlError,
  Scope.Scope | Reactivity.Reactivity
> =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const db = new (loadDriver().Database)(filename)
          db.pragma("journal_mode = WAL")
          return db
        },
        catch: (cause) => new SqlError({ cause, message: "Failed to open the database" })
      }),
      (db) => Effect.sync(() => db.close())
    )
    const cache = new Map<string, PreparedStatement>()
    const prepared = (sql: string): PreparedStatement => {
      let statement = cache.get(sql)
      if (statement === undefined) {
        statement = db.prepare(sql)
        if (cache.size >= prepareCacheSize) cache.delete(cache.keys().next().value!)
        cache.set(sql, statement)
      }
      return statement
    }
    const attempt = <A>(f: () => A): Effect.Effect<A, SqlError> =>
      Effect.try({ try: f, catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" }) })
    const rows = (statement: PreparedStatement, params: ReadonlyArray<unknown>, raw: boolean) => {
      if (statement.reader) return statement.all(...params)
      const result = statement.run(...params)
      return raw ? result : []
    }

    const connection: Connection = {
      execute: (sql, params, transformRows) =>
        attempt(() => {
          const result = rows(prepared(sql), params, false) as ReadonlyArray<any>
          return transformRows === undefined ? result : transformRows(result)
        }),
      executeRaw: (sql, params) => attempt(() => rows(prepared(sql), params, true)),
      executeValues: (sql, params) =>
        attempt(() => {
          const statement = prepared(sql)
          if (!statement.reader) {
            statement.run(...params)
            return []
          }
          statement.raw(true)
          try {
            return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
          } finally {
            statement.raw(false)
          }
        }),
      executeUnprepared: (sql, params, transformRows) =>
        attempt(() => {
          const result = rows(db.prepare(sql), params ?? [], false) as ReadonlyArray<any>
          return transformRows === undefined ? result : transformRows(result)
        }),
      executeStream: () => Effect.dieMessage("executeStream not implemented") as never
    }

    const semaphore = yield* Effect.makeSemaphore(1)
    // As SqliteClient: a statement runs synchronously, so taking the permit to pick the connection up is enough;
    // a transaction holds it for its scope.
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(restore(semaphore.take(1)), Effect.addFinalizer(() => semaphore.release(1))),
        connection
      )
    )
    const sql = yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const raw: RawSqlite["Type"] = {
      use: (f) => semaphore.withPermits(1)(attempt(() => f(db)))
    }
    return { sql, raw }
  })

/** `SqlClient` and `RawSqlite` over one connection to `filename`, closed with the layer. */
export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient | RawSqlite, SqlError> =>
  Layer.scopedContext(
    Effect.map(
      make(filename),
      ({ raw, sql }) => Context.make(SqlClient.SqlClient, sql).pipe(Context.add(RawSqlite, raw))
    )
  ).pipe(Layer.provide(Reactivity.layer))
