import { assert, describe } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Destination } from "../../src/domain/Settings.js"
import { WriteKeyConflict } from "../../src/store/index.js"
import { Sources } from "../../src/store/Sources.js"
import { type FreshStore, source, storeTest, T0 } from "./storeFixtures.js"

const destination = (id: string, url: string): Destination => ({ id, enabled: true, endpoints: [{ url }] })

/** The store's behaviour: sources (see `storeSuite`). */
export const sourcesSuite = (fresh: FreshStore) => {
  const test = storeTest(fresh)

  describe("sources", () => {
    test(
      "upsert, get, list, delete",
      Effect.gen(function*() {
        const sources = yield* Sources
        const created = yield* sources.upsertSource(source("web", "wk-web"), T0)
        const { webhooks } = source("web", "wk-web")
        assert.deepStrictEqual(created, {
          ...source("web", "wk-web"),
          destinations: [{ id: "webhooks", ...webhooks! }],
          createdAt: T0,
          updatedAt: T0
        })
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
        assert.deepStrictEqual(app.destinations, [])

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
      "destinations: `destinations` replaces the list, `webhooks` alone touches only its destination (REFERENCE §1a)",
      Effect.gen(function*() {
        const sources = yield* Sources
        const crm = destination("crm", "https://crm.example.com/in")
        const warehouse = { ...destination("warehouse", "https://dw.example.com/in"), subscribe: { types: ["track"] } }
        const saved = yield* sources.upsertSource(
          { id: "web", writeKey: "wk-web", destinations: [crm, warehouse] },
          T0
        )
        assert.deepStrictEqual(saved.destinations, [crm, warehouse])
        assert.isFalse("webhooks" in saved)

        // Today's body, as a HOOKRELAY_CONFIG entry re-applied at a start: the others stay.
        const old = source("web", "wk-web")
        const merged = yield* sources.upsertSource(old, T0 + 1)
        assert.deepStrictEqual(merged.destinations, [{ id: "webhooks", ...old.webhooks! }, crm, warehouse])
        assert.deepStrictEqual(merged.webhooks, old.webhooks)
        assert.deepStrictEqual(Option.getOrThrow(yield* sources.getSource("web")), merged)

        // A body without `webhooks` removes that destination only, as it removed the webhooks object before.
        const without = yield* sources.upsertSource({ id: "web", writeKey: "wk-web" }, T0 + 2)
        assert.deepStrictEqual(without.destinations, [crm, warehouse])

        // A list holding `webhooks` stores it where the webhooks object always was; the list reads it first.
        const listed = yield* sources.upsertSource(
          {
            id: "web",
            writeKey: "wk-web",
            destinations: [crm, { ...destination("webhooks", "https://a.example.com") }]
          },
          T0 + 3
        )
        assert.deepStrictEqual(listed.destinations.map((d) => d.id), ["webhooks", "crm"])
        assert.strictEqual(listed.webhooks?.endpoints[0]?.url, "https://a.example.com")

        // An empty list removes every destination.
        const none = yield* sources.upsertSource({ id: "web", writeKey: "wk-web", destinations: [] }, T0 + 4)
        assert.deepStrictEqual(none.destinations, [])
        assert.isFalse("webhooks" in none)
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
