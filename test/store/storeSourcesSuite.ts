import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Store, WriteKeyConflict } from "../../src/store/index.js"
import { type FreshStore, source, storeTest, T0 } from "./storeFixtures.js"

/** The store's behaviour: sources (see `storeSuite`). */
export const sourcesSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("sources", () => {
    test(
      "upsert, get, list, delete",
      Effect.gen(function*() {
        const store = yield* Store
        const created = yield* store.upsertSource(source("web", "wk-web"), T0)
        assert.deepStrictEqual(created, { ...source("web", "wk-web"), createdAt: T0, updatedAt: T0 })
        yield* store.upsertSource({ id: "app", writeKey: "wk-app" }, T0)

        const updated = yield* store.upsertSource(source("web", "wk-web-2", "https://example.org/x?y=1"), T0 + 5)
        assert.strictEqual(updated.createdAt, T0)
        assert.strictEqual(updated.updatedAt, T0 + 5)
        assert.strictEqual(updated.writeKey, "wk-web-2")
        assert.strictEqual(updated.webhooks?.endpoints[0]?.url, "https://example.org/x?y=1")

        const got = yield* store.getSource("web")
        assert.deepStrictEqual(got, Option.some(updated))
        assert.isTrue(Option.isNone(yield* store.getSource("nope")))

        const app = Option.getOrThrow(yield* store.getSource("app"))
        assert.isUndefined(app.webhooks)
        assert.isFalse("webhooks" in app)

        const listed = yield* store.listSources()
        assert.deepStrictEqual(listed.map((s) => s.id), ["app", "web"])

        assert.isTrue(yield* store.deleteSource("web"))
        assert.isFalse(yield* store.deleteSource("web"))
        assert.deepStrictEqual((yield* store.listSources()).map((s) => s.id), ["app"])
        // The old key no longer finds anything.
        assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey("wk-web-2")))
      })
    )

    test(
      "write key lookup finds the right key only",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.upsertSource(source("web", "wk-web"), T0)
        yield* store.upsertSource(source("app", "wk-app"), T0)
        const found = yield* store.findSourceByWriteKey("wk-web")
        assert.strictEqual(Option.getOrThrow(found).id, "web")
        assert.strictEqual(Option.getOrThrow(yield* store.findSourceByWriteKey("wk-app")).id, "app")
        for (const wrong of ["wk-we", "wk-web ", "WK-WEB", "", "wk-webx"]) {
          assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey(wrong)), wrong)
        }
        // Changing the key retires the old one.
        yield* store.upsertSource(source("web", "wk-new"), T0 + 1)
        assert.isTrue(Option.isNone(yield* store.findSourceByWriteKey("wk-web")))
        assert.strictEqual(Option.getOrThrow(yield* store.findSourceByWriteKey("wk-new")).id, "web")
      })
    )

    test(
      "a write key belongs to one source",
      Effect.gen(function*() {
        const store = yield* Store
        yield* store.upsertSource(source("web", "wk-shared"), T0)
        const error = yield* Effect.flip(store.upsertSource(source("app", "wk-shared"), T0))
        assert.instanceOf(error, WriteKeyConflict)
        assert.deepStrictEqual(
          { sourceId: error.sourceId, conflicting: error.conflictingSourceId },
          { sourceId: "app", conflicting: "web" }
        )
        assert.isTrue(Option.isNone(yield* store.getSource("app")))
        // Re-saving the owner with its own key is fine.
        yield* store.upsertSource(source("web", "wk-shared"), T0 + 1)
      })
    )
  })
}
