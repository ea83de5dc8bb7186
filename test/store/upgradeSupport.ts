import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Effect, FileSystem, type Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as Path from "node:path"
import * as SqliteConnection from "../../src/store/sqlite/SqliteConnection.js"
import { layerPg, layerSqlite, type StoreServices } from "../../src/store/Store.js"
import { databaseUrl } from "../support/postgres.js"

/**
 * What an upgrade test runs: `old` is a plain connection to the database (to write it as an older build did), `store`
 * the current build's store over the same database.
 */
export type Upgrade = (
  old: Layer.Layer<SqlClient.SqlClient, unknown>,
  store: Layer.Layer<StoreServices, unknown>
) => Effect.Effect<void, unknown>

/** `upgrade` over a fresh SQLite file. */
export const onSqlite = (upgrade: Upgrade) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const filename = Path.join(yield* fs.makeTempDirectoryScoped(), "hookrelay.db")
    yield* upgrade(SqliteConnection.layer(filename), layerSqlite({ filename, checkpoints: false, reader: false }))
  }).pipe(Effect.provide(NodeFileSystem.layer))

/** `upgrade` in a fresh PostgreSQL schema, dropped afterwards. */
export const onPg = (upgrade: Upgrade) =>
  Effect.gen(function*() {
    const schema = `hookrelay_test_${randomBytes(6).toString("hex")}`
    const admin = PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })
    const inSchema = (statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
      Effect.flatMap(SqlClient.SqlClient, statement).pipe(Effect.provide(admin), Effect.scoped, Effect.orDie)
    yield* inSchema((sql) => sql`CREATE SCHEMA ${sql(schema)}`)
    const old = PgClient.layer({
      url: Redacted.make(databaseUrl),
      maxConnections: 1,
      startupParameters: { search_path: schema }
    })
    yield* upgrade(old, layerPg({ url: databaseUrl, schema, maxConnections: 2 })).pipe(
      Effect.ensuring(inSchema((sql) => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`))
    )
  })
