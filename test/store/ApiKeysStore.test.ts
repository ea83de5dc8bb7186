import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { describe } from "@effect/vitest"
import { Effect, FileSystem, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { layerPg, layerSqlite } from "../../src/store/index.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { apiKeyStoreSuite } from "./apiKeyStoreSuite.js"

/** API keys and the audit log on both stores: a new SQLite file, and a new PostgreSQL schema dropped afterwards. */

const freshSqlite = () =>
  Layer.unwrap(
    Effect.map(FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeTempDirectoryScoped())), (directory) =>
      layerSqlite({ directory }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

const skipPg = skipUnlessCi("the PostgreSQL API key tests", await postgresUnavailable())

const freshPg = () => {
  const schema = `hookrelay_keys_${randomBytes(6).toString("hex")}`
  const dropAfterwards = Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 })),
      Effect.orDie
    )
  ))
  return layerPg({ url: databaseUrl, schema, maxConnections: 4 }).pipe(Layer.provide(dropAfterwards))
}

describe("API keys and audit log (SQLite)", () => {
  apiKeyStoreSuite(freshSqlite)
})

describe.skipIf(skipPg)("API keys and audit log (PostgreSQL)", () => {
  apiKeyStoreSuite(freshPg)
})
