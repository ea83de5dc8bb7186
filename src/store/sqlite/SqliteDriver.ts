import { createRequire } from "node:module"

/** The part of better-sqlite3's API used here (the package ships no types of its own). */
export interface Database {
  readonly prepare: (sql: string) => PreparedStatement
  readonly pragma: (source: string) => unknown
  readonly transaction: <F extends (...args: Array<any>) => any>(fn: F) => F
  /** A transaction is open (a nested `transaction` then runs in a savepoint). */
  readonly inTransaction: boolean
  readonly close: () => void
}

export interface PreparedStatement {
  readonly reader: boolean
  readonly all: (...params: ReadonlyArray<unknown>) => Array<unknown>
  /** The first row, or `undefined`. */
  readonly get: (...params: ReadonlyArray<unknown>) => unknown
  /** The rows one at a time, read as they are asked for. */
  readonly iterate: (...params: ReadonlyArray<unknown>) => IterableIterator<unknown>
  readonly run: (...params: ReadonlyArray<unknown>) => { readonly changes: number; readonly lastInsertRowid: unknown }
  readonly raw: (on: boolean) => PreparedStatement
  /** Rows as their first column's value alone. */
  readonly pluck: (on: boolean) => PreparedStatement
}

/**
 * better-sqlite3, an optional dependency of hookrelay (a project that only uses `hookrelay/client` never needs it).
 * `path` is absolute, for threads that load it themselves. Missing, it throws Node's own "Cannot find module
 * 'better-sqlite3'" error, whose first line the CLI shows as the reason the SQLite store cannot open.
 */
export const loadDriver = (): { readonly path: string; readonly Database: new(filename: string) => Database } => {
  const require = createRequire(import.meta.url)
  const path = require.resolve("better-sqlite3")
  return { path, Database: require(path) as new(filename: string) => Database }
}
