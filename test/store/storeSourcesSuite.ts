import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import { WriteKeyConflict } from "../../src/store/index.js"
import { Sources } from "../../src/store/Sources.js"
import { type FreshStore, source, storeTest, T0 } from "./storeFixtures.js"

/** The store's behaviour: sources (see `storeSuite`). */
export const sourcesSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("sources", () => {
    test(
      "upsert, get, list, delete",
      Effect.gen(function*() {
        const sources = yield* Sources
        const created = yield* sources.upsertSource(source("web", "wk-web"), T0)
        assert.deepStrictEqual(created, { ...source("web", "wk-web"), createdAt: T0, updatedAt: T0 })
        yield* sources.upsertSource({ id: "app", writeKey: "wk-app" }, T0)

        const updated = yield* sources.upsertSource(source("web", "wk-web-2", "https://example.org/x?y=1"), T0 + 5)
        assert.strictEqual(updated.createdAt, T0)
        assert.strictEqual(updated.updatedAt, T0 + 5)
        assert.strictEqual(updated.writeKey, "wk-web-2")
        assert.strictEqual(updated.webhooks?.endpoints[0]?.url, "https://example.org/x?y=1")

        const got = yield* sources.getSource("web")
        assert.deepStrictEqual(got, Option.some(updated))
        assert.isTrue(Option.isNone(yield* sources.getSource("nope")))

        const app = Option.getOrThrow(yield* sources.getSource("app"))
        assert.isUndefined(app.webhooks)
        assert.isFalse("webhooks" in app)

        const listed = yield* sources.listSources()
        assert.deepStrictEqual(listed.map((s) => s.id), ["app", "web"])

        assert.isTrue(yield* sources.deleteSource("web"))
        assert.isFalse(yield* sources.deleteSource("web"))
        assert.deepStrictEqual((yield* sources.listSources()).map((s) => s.id), ["app"])
        // The old key no longer finds anything.
        assert.isTrue(Option.isNone(yield* sources.findSourceByWriteKey("wk-web-2")))
      })
    )

    test(
      "write key lookup finds the right key only",
      Effect.gen(function*() {
        const sources = yield* Sources
        yield* sources.upsertSource(source("web", "wk-web"), T0)
        yield* sources.upsertSource(source("app", "wk-app"), T0)
        const found = yield* sources.findSourceByWriteKey("wk-web")
        assert.strictEqual(Option.getOrThrow(found).id, "web")
        assert.strictEqual(Option.getOrThrow(yield* sources.findSourceByWriteKey("wk-app")).id, "app")
        for (const wrong of ["wk-we", "wk-web ", "WK-WEB", "", "wk-webx"]) {
          assert.isTrue(Option.isNone(yield* sources.findSourceByWriteKey(wrong)), wrong)
        }
        // Changing the key retires the old one.
        yield* sources.upsertSource(source("web", "wk-new"), T0 + 1)
        assert.isTrue(Option.isNone(yield* sources.findSourceByWriteKey("wk-web")))
        assert.strictEqual(Option.getOrThrow(yield* sources.findSourceByWriteKey("wk-new")).id, "web")
      })
    )

    test(
      "a write key belongs to one source",
      Effect.gen(function*() {
        const sources = yield* Sources
        yield* sources.upsertSource(source("web", "wk-shared"), T0)
        const error = yield* Effect.flip(sources.upsertSource(source("app", "wk-shared"), T0))
        assert.instanceOf(error, WriteKeyConflict)
        assert.deepStrictEqual(
          { sourceId: error.sourceId, conflicting: error.conflictingSourceId },
          { sourceId: "app", conflicting: "web" }
        )
        assert.isTrue(Option.isNone(yield* sources.getSource("app")))
        // Re-saving the owner with its own key is fine.
        yield* sources.upsertSource(source("web", "wk-shared"), T0 + 1)
      })
    )
  })
}
