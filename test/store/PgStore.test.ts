import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { layerPg } from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import { utcDay } from "../../src/store/Rows.js"
import { Sources } from "../../src/store/Sources.js"
import { Usage } from "../../src/store/Usage.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { audienceStoreSuite } from "./audienceStoreSuite.js"
import { deletionStoreSuite } from "./deletionStoreSuite.js"
import { endpointStoreSuite } from "./endpointStoreSuite.js"
import { messageLogStoreSuite } from "./messageLogStoreSuite.js"
import { entry, storeSuite, survivesReopen } from "./storeSuite.js"

/**
 * The same suite against PostgreSQL at DATABASE_URL, each test in a new schema that is dropped
 * afterwards. Skipped (with the reason printed) when DATABASE_URL is unset or unreachable; under CI that fails.
 */

const admin = (url: string) =>
  PgClient.layer({ url: Redacted.make(url), connectTimeout: "3 seconds", maxConnections: 1 })

const skip = skipUnlessCi("the PostgreSQL store tests", await postgresUnavailable())

/** A schema name unique to this run and test. */
const newSchema = () => `hookrelay_test_${randomBytes(6).toString("hex")}`

/** Drops the schema when the layer's scope closes (after the store's own pool has closed). */
const dropSchemaAfterwards = (url: string, schema: string) =>
  Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(Effect.provide(admin(url)), Effect.orDie)
  ))

const freshPg = (url: string) => () => {
  const schema = newSchema()
  return layerPg({ url, schema, maxConnections: 8 }).pipe(Layer.provide(dropSchemaAfterwards(url, schema)))
}

describe.skipIf(skip)("Store (PostgreSQL)", () => {
  const url = databaseUrl
  storeSuite(freshPg(url), { shared: true })
  deletionStoreSuite(freshPg(url))
  audienceStoreSuite(freshPg(url))
  messageLogStoreSuite(freshPg(url))
  endpointStoreSuite(freshPg(url))

  it.live("data survives closing and reopening the pool", () => {
    const schema = newSchema()
    return survivesReopen(layerPg({ url, schema })).pipe(
      Effect.ensuring(
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
        }).pipe(Effect.provide(admin(url)), Effect.orDie)
      )
    )
  })

  // Live clock: real connections; the wait only bounds how long the held row may keep the others back.
  it.live("an ingest commit does not queue behind another transaction holding the day's usage row", () =>
    Effect.gen(function*() {
      const schema = newSchema()
      const context = yield* Layer.build(
        layerPg({ url, schema, maxConnections: 10 }).pipe(Layer.provide(dropSchemaAfterwards(url, schema)))
      )
      const sources = Context.get(context, Sources)
      const outbox = Context.get(context, Outbox)
      const usageCounts = Context.get(context, Usage)
      const now = Date.UTC(2026, 0, 5, 12)
      yield* sources.upsertSource({ id: "web", writeKey: "wk_usage_rows" }, now)
      yield* outbox.enqueue("web", [entry("first")], now)

      // Another session holds shard 0 of the day's usage row in an open transaction.
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          yield* sql.withTransaction(Effect.gen(function*() {
            const held = yield* sql`UPDATE ${sql(schema)}.usage_daily SET api_calls = api_calls
            WHERE source_id = 'web' AND day = ${utcDay(now)} AND shard = 0 RETURNING shard`
            assert.strictEqual(held.length, 1, "the first commit's usage row is locked")
            yield* Deferred.succeed(holding, undefined)
            yield* Deferred.await(release)
          }))
        }).pipe(Effect.provide(admin(url)))
      )
      yield* Deferred.await(holding)

      let committed = 0
      // Forked one after the other by this fiber (forking returns at once): a fiber forked by a concurrent
      // `forEach`'s worker would be interrupted when that worker ends.
      const ingests = yield* Effect.forEach(
        Array.from({ length: 8 }, (_, i) => i),
        (i) =>
          Effect.forkChild(
            Effect.tap(outbox.enqueue("web", [entry(`m${i}`)], now), () => Effect.sync(() => committed++))
          )
      )
      yield* Effect.sleep("3 seconds").pipe(
        Effect.race(Effect.repeat(Effect.sleep("20 millis"), { until: () => committed >= 7 }))
      )
      const whileHeld = committed
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.joinAll(ingests)
      // Eight commits take eight consecutive shards: at most one of them is the held one.
      assert.isAtLeast(whileHeld, 7, `${whileHeld} of 8 commits went through while another session held one usage row`)
      const [day] = yield* usageCounts.usage("web", now, 1)
      assert.deepStrictEqual([day!.apiCalls, day!.messages], [9, 9])
    }))
})
