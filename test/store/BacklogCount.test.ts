import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer } from "effect"
import { layerSqlite, Store } from "../../src/store/index.js"

const body = new TextEncoder().encode("{}")

describe("Store.backlog", () => {
  it.effect("counts only the statuses asked for, the others reported as 0", () =>
    Effect.gen(function*() {
      const directory = yield* FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeTempDirectoryScoped()))
      const store = yield* Effect.provide(Store, yield* Layer.build(layerSqlite({ directory })))
      yield* store.upsertSource({ id: "web", writeKey: "k" }, 1)
      yield* store.enqueue("web", ["a", "b", "c", "d"].map((messageId) => ({ messageId, body })), 10)
      const claimed = yield* store.claimDue("w", 10, 3, 60_000)
      yield* store.completeMany("w", [
        { _tag: "Delivered", jobId: claimed[0]!.id, at: 11 },
        { _tag: "Dead", jobId: claimed[1]!.id, at: 11, lastError: "gone" }
      ])

      assert.deepStrictEqual(yield* store.backlog(), { pending: 1, delivering: 1, delivered: 1, dead: 1 })
      assert.deepStrictEqual(yield* store.backlog({ delivered: false, dead: false }), {
        pending: 1,
        delivering: 1,
        delivered: 0,
        dead: 0
      })
      assert.deepStrictEqual(yield* store.backlog({ delivered: false }), {
        pending: 1,
        delivering: 1,
        delivered: 0,
        dead: 1
      })
      assert.deepStrictEqual(yield* store.backlog({ dead: false }), {
        pending: 1,
        delivering: 1,
        delivered: 1,
        dead: 0
      })
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
