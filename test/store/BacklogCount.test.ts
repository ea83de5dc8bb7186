import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, FileSystem, Layer } from "effect"
import { layerSqlite } from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"

const body = new TextEncoder().encode("{}")

describe("Store.backlog", () => {
  it.effect("counts only the statuses asked for, the others reported as 0", () =>
    Effect.gen(function*() {
      const directory = yield* FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeTempDirectoryScoped()))
      const store = yield* Layer.build(layerSqlite({ directory }))
      const sources = Context.get(store, Sources)
      const outbox = Context.get(store, Outbox)
      yield* sources.upsertSource({ id: "web", writeKey: "k" }, 1)
      yield* outbox.enqueue("web", ["a", "b", "c", "d"].map((messageId) => ({ messageId, body })), 10)
      const claimed = yield* outbox.claimDue("w", 10, 3, 60_000)
      yield* outbox.completeMany("w", [
        { _tag: "Delivered", jobId: claimed[0]!.id, at: 11 },
        { _tag: "Dead", jobId: claimed[1]!.id, at: 11, lastError: "gone" }
      ])

      assert.deepStrictEqual(yield* outbox.backlog(), { pending: 1, delivering: 1, delivered: 1, dead: 1 })
      assert.deepStrictEqual(yield* outbox.backlog({ delivered: false, dead: false }), {
        pending: 1,
        delivering: 1,
        delivered: 0,
        dead: 0
      })
      assert.deepStrictEqual(yield* outbox.backlog({ delivered: false }), {
        pending: 1,
        delivering: 1,
        delivered: 0,
        dead: 1
      })
      assert.deepStrictEqual(yield* outbox.backlog({ dead: false }), {
        pending: 1,
        delivering: 1,
        delivered: 1,
        dead: 0
      })
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
