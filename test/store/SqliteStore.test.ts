import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, FileSystem, Layer } from "effect"
import * as Path from "node:path"
import { layerFromConfig, layerSqlite, sqliteFileName } from "../../src/store/index.js"
import { Sources } from "../../src/store/Sources.js"
import { audienceStoreSuite } from "./audienceStoreSuite.js"
import { deletionStoreSuite } from "./deletionStoreSuite.js"
import { endpointStoreSuite } from "./endpointStoreSuite.js"
import { messageLogStoreSuite } from "./messageLogStoreSuite.js"
import { storeSuite, survivesReopen } from "./storeSuite.js"

/** A new store in a new temporary directory, removed when the test's scope closes. */
const freshSqlite = () =>
  Layer.unwrap(
    Effect.map(FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeTempDirectoryScoped())), (directory) =>
      layerSqlite({ directory }))
  ).pipe(Layer.provide(NodeFileSystem.layer))

describe("Store (SQLite)", () => {
  storeSuite(freshSqlite, { shared: false })
  deletionStoreSuite(freshSqlite)
  audienceStoreSuite(freshSqlite)
  messageLogStoreSuite(freshSqlite)
  endpointStoreSuite(freshSqlite)

  it.live("data survives closing and reopening the file", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped()
      yield* survivesReopen(layerSqlite({ filename: Path.join(directory, "nested", "store.db") }))
      assert.isTrue(yield* fs.exists(Path.join(directory, "nested", "store.db")))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.live("layerFromConfig picks SQLite under HOOKRELAY_DATA_DIR without a postgres:// DATABASE_URL", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped()
      const provider = ConfigProvider.fromEnv({ env: { HOOKRELAY_DATA_DIR: directory, DATABASE_URL: "mysql://nope" } })
      yield* Effect.gen(function*() {
        const sources = yield* Sources
        yield* sources.upsertSource({ id: "web", writeKey: "k" }, 1)
      }).pipe(Effect.provide(layerFromConfig.pipe(Layer.provide(ConfigProvider.layer(provider)))))
      assert.isTrue(yield* fs.exists(Path.join(directory, sqliteFileName)))
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
