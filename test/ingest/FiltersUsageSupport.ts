import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { layerPg } from "../../src/store/index.js"
import type { StoreServices } from "../../src/store/Store.js"
import { basic } from "../support/http.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * Helpers of the filter, usage and message-log tests: the two stores to run them on, and a
 * batch POST. PostgreSQL is skipped, with the reason printed, when DATABASE_URL is unset or
 * unreachable, and fails instead under CI.
 */

const admin = (url: string) =>
  PgClient.layer({ url: Redacted.make(url), connectTimeout: "3 seconds", maxConnections: 1 })

/** Why the PostgreSQL variants cannot run here (printed; under CI it fails instead), or undefined. */
export const pgSkipReason = await postgresUnavailable().then((reason) =>
  skipUnlessCi("the PostgreSQL variants", reason) ? reason : undefined
)

/** A store in a schema of its own, dropped when the layer's scope closes. */
const freshPg = (): Layer.Layer<StoreServices, unknown> => {
  const schema = `hookrelay_test_${randomBytes(6).toString("hex")}`
  const drop = Layer.effectDiscard(Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(Effect.provide(admin(databaseUrl)), Effect.orDie)
  ))
  return layerPg({ url: databaseUrl, schema, maxConnections: 8 }).pipe(Layer.provide(drop))
}

export interface StoreVariant {
  readonly name: string
  /** `undefined`: startApp's own SQLite file. */
  readonly store: () => Layer.Layer<StoreServices, unknown> | undefined
  readonly skip: string | undefined
}

export const storeVariants: ReadonlyArray<StoreVariant> = [
  { name: "SQLite", store: () => undefined, skip: undefined },
  { name: "PostgreSQL", store: freshPg, skip: pgSkipReason }
]

/** `POST /v1/batch` with Basic auth; the HTTP status. */
export const postBatch = (baseUrl: string, writeKey: string, batch: ReadonlyArray<Record<string, unknown>>) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basic(writeKey) },
      body: JSON.stringify({ batch })
    })
    await response.arrayBuffer()
    return response.status
  })
