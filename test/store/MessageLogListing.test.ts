import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { describe } from "@effect/vitest"
import { Effect, FileSystem, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { layerPg, layerSqlite } from "../../src/store/index.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { messageLogListingSuite } from "./messageLogListingSuite.js"

/** The message log's listing on both stores: a new SQLite file, and a new PostgreSQL schema, per test. */

const freshSqlite = () =>
  Layer.unwrap(
    Effect.map(FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeTempDirectoryScoped())), (directory) =>
      layerSqlite({ directory }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

const skip = skipUnlessCi("the PostgreSQL message log tests", await postgresUnavailable())

const freshPg = (url: string) => () => {
  const schema = `hookrelay_log_${randomBytes(6).toString("hex")}`
  const dropAfterwards = Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(url), connectTimeout: "3 seconds", maxConnections: 1 })),
      Effect.orDie
    )
  ))
  return layerPg({ url, schema, maxConnections: 8 }).pipe(Layer.provide(dropAfterwards))
}

describe("MessageLog.listMessages (SQLite)", () => {
  messageLogListingSuite(freshSqlite)
})

describe.skipIf(skip)("MessageLog.listMessages (PostgreSQL)", () => {
  messageLogListingSuite(freshPg(databaseUrl))
})
