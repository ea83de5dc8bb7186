import type { Config } from "effect"
import { Effect, Layer, Option, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { mkdirSync } from "node:fs"
import * as Path from "node:path"
import * as MessageIdLog from "./sqlite/MessageIdLog.js"
import type { SqliteHotPaths } from "./sqlite/SqliteConnection.js"
import * as SqliteConnection from "./sqlite/SqliteConnection.js"
import * as SqliteStore from "./sqlite/SqliteStore.js"
import * as WalCheckpoints from "./sqlite/WalCheckpoints.js"
import { dataDirectoryConfig, postgresUrlConfig } from "./StoreConfig.js"
import { StoreError } from "./StoreError.js"
import type { StoreServices } from "./StoreOperations.js"

export type { StoreServices } from "./StoreOperations.js"

/**
 * The outbox and everything around it: sources, jobs, attempts, dedupe, usage, one service per concern
 * (`StoreServices`), every layer here providing all of them from one build. One behaviour, two databases: SQLite
 * (embedded, one process) and PostgreSQL (several processes sharing jobs through row leases).
 */

/**
 * The SQLite store over the connection in context (`SqliteConnection.layer`, and its `SqliteReader` when provided):
 * migrations run when it is built. `layerSqlite` is this over a file, with its checkpoints and message id log.
 */
export const layerOnSqliteConnection: Layer.Layer<
  StoreServices,
  StoreError,
  SqlClient.SqlClient | SqliteHotPaths
> = Layer.effectContext(SqliteStore.make)

/** A layer whose construction failure is reported as the store's failure to open. */
const openFailure = <A, E, R>(layer: Layer.Layer<A, E, R>): Layer.Layer<A, StoreError, R> =>
  Layer.fromBuild((memoMap, scope) =>
    Effect.mapError(
      Layer.buildWithMemoMap(layer, memoMap, scope),
      (cause) => new StoreError({ operation: "open", cause })
    )
  )

export const sqliteFileName = "hookrelay.db"

export interface SqliteOptions {
  /** The database file (or `:memory:`). Wins over `directory`. */
  readonly filename?: string | undefined
  /** The data directory; the file is `<directory>/hookrelay.db`. Default `./data`. */
  readonly directory?: string | undefined
  /**
   * WAL checkpoints on a worker thread instead of inside commits (see `WalCheckpoints`); `false`
   * leaves them to SQLite's checkpoint on commit. Not used for `:memory:` or URI filenames.
   */
  readonly checkpoints?: WalCheckpoints.WalCheckpointOptions | false | undefined
  /**
   * A second, read-only connection for the long reads (backlog counts, message search, attempts, dead letters,
   * usage; see `SqliteConnection.SqliteReader`); `false` sends them through the one writing connection, in the
   * queue of ingest commits. Not used for `:memory:` or URI filenames.
   */
  readonly reader?: false | undefined
  /** When the message id log is merged into the dedupe and look-up indexes (see `MessageIdLog`). */
  readonly messageIdLog?: MessageIdLog.MessageIdLogOptions | undefined
}

export const sqliteFilename = (options: SqliteOptions): string =>
  options.filename ?? Path.join(options.directory ?? "./data", sqliteFileName)

/**
 * SQLite in one file (WAL, synchronous=NORMAL, busy_timeout). The directory is created when
 * missing. One writing connection, on a thread of its own (`SqliteConnection`: a `SqlClient`, and the hot
 * transactions of ingest, claims and completions): keep transactions short, as one runs at a time.
 * Long reads go to a read-only connection on a second thread (`SqliteReader`), checkpoints run on a third
 * (`WalCheckpoints`). Ingest writes a message id that would land inside an index by message id to a log instead,
 * merged into the indexes later (`MessageIdLog`).
 */
export const layerSqlite = (options: SqliteOptions = {}): Layer.Layer<StoreServices, StoreError> =>
  Layer.unwrap(Effect.gen(function*() {
    const filename = sqliteFilename(options)
    if (filename !== ":memory:" && !filename.startsWith("file:")) {
      yield* Effect.try({
        try: () => mkdirSync(Path.dirname(Path.resolve(filename)), { recursive: true }),
        catch: (cause) => new StoreError({ operation: "open", cause })
      })
    }
    // After the store's own connection settings (built first through provideMerge), so that
    // `wal_autocheckpoint = 0` is the last word.
    const withCheckpoints = options.checkpoints === false || !WalCheckpoints.isSharedFile(filename)
      ? layerOnSqliteConnection
      : WalCheckpoints.layer(filename, options.checkpoints ?? {}).pipe(Layer.provideMerge(layerOnSqliteConnection))
    // After the migrations (the store is built first), before anything is enqueued (the layer is not ready until the
    // log left by an earlier process is merged).
    const store = MessageIdLog.layer(options.messageIdLog).pipe(Layer.provideMerge(withCheckpoints))
    // The reader opens the file once the writer created it in WAL mode (provideMerge builds the writer first).
    const connections = WalCheckpoints.isSharedFile(filename) && options.reader !== false
      ? SqliteConnection.layerReader(filename).pipe(Layer.provideMerge(SqliteConnection.layer(filename)))
      : SqliteConnection.layer(filename)
    return store.pipe(Layer.provide(openFailure(connections)))
  }))

export interface PgOptions {
  readonly url: string | Redacted.Redacted
  /**
   * Keep hookrelay's tables in this schema (created when missing) by setting `search_path` on
   * every connection. Tests use a fresh schema per run. Letters, digits and `_` only.
   */
  readonly schema?: string | undefined
  readonly maxConnections?: number | undefined
}

const schemaName = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * `@effect/sql-pg` (an optional dependency: a client-only install leaves it out) and the PostgreSQL store over it,
 * loaded when a PostgreSQL store is built, so that SQLite users and the library's import need neither.
 */
const loadPg = Effect.tryPromise({
  try: () =>
    Promise.all([import("@effect/sql-pg/PgClient"), import("./pg/PgStore.js")]).then(([PgClient, PgStore]) => ({
      PgClient,
      PgStore
    })),
  catch: (cause) => new StoreError({ operation: "open", cause })
})

/** PostgreSQL through `@effect/sql-pg`'s connection pool. Several hookrelay processes may share the database. */
export const layerPg = (options: PgOptions): Layer.Layer<StoreServices, StoreError> =>
  Layer.unwrap(Effect.gen(function*() {
    const schema = options.schema
    if (schema !== undefined && !schemaName.test(schema)) {
      return yield* new StoreError({ operation: "open", cause: new Error(`invalid schema name: ${schema}`) })
    }
    const { PgClient, PgStore } = yield* loadPg
    const url = Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url)
    const createSchema = Effect.gen(function*() {
      if (schema === undefined) return
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE SCHEMA IF NOT EXISTS ${sql(schema)}`.pipe(
        Effect.mapError((cause) => new StoreError({ operation: "open", cause }))
      )
    })
    return Layer.effectContext(Effect.andThen(createSchema, PgStore.make)).pipe(
      Layer.provide(openFailure(PgClient.layer({
        url,
        maxConnections: options.maxConnections,
        applicationName: "hookrelay",
        // Sent in every connection's startup packet: the session starts in the schema.
        startupParameters: schema === undefined ? undefined : { search_path: schema }
      })))
    )
  }))

/**
 * PostgreSQL when `DATABASE_URL` is a postgres:// URL, else SQLite under `HOOKRELAY_DATA_DIR`.
 */
export const layerFromConfig: Layer.Layer<StoreServices, StoreError | Config.ConfigError> = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* postgresUrlConfig
    if (Option.isSome(url)) return layerPg({ url: url.value })
    return layerSqlite({ directory: yield* dataDirectoryConfig })
  })
)
