import { assert, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect, Option } from "effect"
import type { SourceConfig } from "../../src/domain/Settings.js"
import type { ClaimedJob, EnqueueEntry } from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import type { StoreServices } from "../../src/store/Store.js"

/**
 * What the store suites share. `fresh` must build a new, empty store each time it is provided (every test provides it
 * once), so tests share no rows. Times are fixed epoch milliseconds: the store never reads a clock.
 */

export const T0 = 1_763_700_000_000 // 2025-11-21T04:40:00Z
export const second = 1000
export const hour = 60 * 60 * second

const encoder = new TextEncoder()
const decoder = new TextDecoder()
export const body = (text: string): Uint8Array => encoder.encode(text)
export const text = (bytes: Uint8Array): string => decoder.decode(bytes)

export const source = (id: string, writeKey: string, url = "https://example.com/hook"): SourceConfig => ({
  id,
  writeKey,
  webhooks: {
    enabled: true,
    sharedSecret: "s3cret",
    endpoints: [{ url, headers: { "X-Team": "a" } }]
  }
})

export const entry = (messageId: string, userId?: string): EnqueueEntry => ({
  messageId,
  userId,
  body: body(JSON.stringify({ messageId, type: "track", event: "Clicked" }))
})

export const ids = (jobs: ReadonlyArray<ClaimedJob>) => jobs.map((job) => job.id)

export interface SuiteOptions {
  /** PostgreSQL: several live processes share the database, so no lease is abandoned at start. */
  readonly shared: boolean
}

export type FreshStore = () => Layer.Layer<StoreServices, unknown>

/** A live test on a fresh store. */
export const storeTest = (fresh: FreshStore) => <A, E>(name: string, body: Effect.Effect<A, E, StoreServices>) =>
  it.live(name, () => Effect.provide(body, fresh()))

/** Builds the store, writes through it, closes it; then `reopen` must see the same data. */
export const survivesReopen = (open: Layer.Layer<StoreServices, unknown>) =>
  Effect.gen(function*() {
    yield* Effect.gen(function*() {
      const sources = yield* Sources
      const outbox = yield* Outbox
      yield* sources.upsertSource(source("web", "wk-web"), T0)
      yield* outbox.enqueue("web", [entry("m1"), entry("m2")], T0)
      const [job] = yield* outbox.claimDue("w", T0, 1, 60 * second)
      yield* outbox.reschedule("w", job!.id, T0 + 5, T0 + 1, { n: 1 }, "503")
    }).pipe(Effect.provide(open))

    yield* Effect.gen(function*() {
      const sources = yield* Sources
      const outbox = yield* Outbox
      assert.strictEqual(Option.getOrThrow(yield* sources.findSourceByWriteKey("wk-web")).id, "web")
      assert.strictEqual((yield* outbox.enqueue("web", [entry("m1")], T0 + 10)).duplicates, 1)
      const jobs = yield* outbox.claimDue("w2", T0 + 10, 10, 60 * second)
      assert.deepStrictEqual(jobs.map((job) => job.messageId).sort(), ["m1", "m2"])
      const m1 = jobs.find((job) => job.firstAttemptAt !== null)!
      assert.deepStrictEqual({ first: m1.firstAttemptAt, state: m1.endpointState }, { first: T0 + 1, state: { n: 1 } })
    }).pipe(Effect.provide(open))
  })
