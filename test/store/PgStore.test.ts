import { PgClient } from "@effect/sql-pg"
import { describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { isPostgresUrl, layerPg } from "../../src/store/index.js"
import { audienceStoreSuite } from "./audienceStoreSuite.js"
import { messageLogStoreSuite } from "./messageLogStoreSuite.js"
import { storeSuite, survivesReopen } from "./storeSuite.js"

/**
 * The same suite against PostgreSQL at DATABASE_URL, each test in a new schema that is dropped
 * afterwards. Skipped (with the reason printed) when DATABASE_URL is unset or unreachable.
 */

const databaseUrl = process.env.DATABASE_URL

const admin = (url: string) =>
  PgClient.layer({ url: Redacted.make(url), connectTimeout: "3 seconds", maxConnections: 1 })

const skipReason = await (async () => {
  if (databaseUrl === undefined || databaseUrl === "") return "DATABASE_URL is not set"
  if (!isPostgresUrl(databaseUrl)) return "DATABASE_URL is not a postgres:// URL"
  const exit = await Effect.runPromiseExit(Effect.scoped(Layer.build(admin(databaseUrl))))
  return Exit.isSuccess(exit) ? undefined : `PostgreSQL at DATABASE_URL is unreachable: ${String(exit.cause)}`
})()

if (skipReason !== undefined) console.warn(`Skipping the PostgreSQL store tests: ${skipReason}`)

/** A schema name unique to this run and test. */
const newSchema = () => `hookrelay_test_${randomBytes(6).toString("hex")}`

/** Drops the schema when the layer's scope closes (after the store's own pool has closed). */
const dropSchemaAfterwards = (url: string, schema: string) =>
  Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(Effect.provide(admin(url)), Effect.orDie)
  ))

const freshPg = (url: string) => () => {
  const schema = newSchema()
  return layerPg({ url, schema, maxConnections: 8 }).pipe(Layer.provide(dropSchemaAfterwards(url, schema)))
}

describe.skipIf(skipReason !== undefined)("Store (PostgreSQL)", () => {
  const url = databaseUrl ?? ""
  storeSuite(freshPg(url), { shared: true })
  audienceStoreSuite(freshPg(url))
  messageLogStoreSuite(freshPg(url))

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
})
