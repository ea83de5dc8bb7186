import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { Endpoints } from "../../src/store/Endpoints.js"
import { migrations, migrationsTable } from "../../src/store/Migrations.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { onPg, onSqlite, type Upgrade } from "./upgradeSupport.js"

/**
 * Migration 14 (REFERENCE §7b): a URL disabled when the disabled state was kept by URL is disabled at every endpoint
 * (source, destination, URL) that has it, with its time and reason; a URL no source has is dropped.
 */

const T0 = 1_763_700_000_000
const gone = "https://gone.example.com/hook"
const fine = "https://fine.example.com/hook"

const before14 = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < 14))
const migrateBefore14 = Migrator.make({})({ loader: Migrator.fromRecord(before14), table: migrationsTable })

const writeAsTheOldBuild = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateBefore14
  const destination = (id: string, urls: ReadonlyArray<string>) => ({
    id,
    enabled: true,
    endpoints: urls.map((url) => ({ url }))
  })
  const rows = [
    ["web", { enabled: true, endpoints: [{ url: gone }, { url: fine }] }, [destination("crm", [gone])]],
    ["app", null, [destination("dw", [fine]), destination("crm", [gone])]]
  ] as const
  for (const [id, webhooks, destinations] of rows) {
    yield* sql`
      INSERT INTO sources (id, write_key, write_key_hash, webhooks, destinations, created_at, updated_at)
      VALUES (${id}, ${`wk-${id}`}, ${`hash-${id}`}, ${webhooks === null ? null : JSON.stringify(webhooks)},
        ${JSON.stringify(destinations)}, ${T0}, ${T0})`
  }
  yield* sql`INSERT INTO disabled_endpoints (url, disabled_at, reason) VALUES (${gone}, ${T0}, 'HTTP 410 Gone')`
  yield* sql`INSERT INTO disabled_endpoints (url, disabled_at, reason) VALUES ('https://nobody.example', ${T0}, 'x')`
})

const openedByThisBuild = Effect.gen(function*() {
  const disabled = yield* (yield* Endpoints).disabledEndpoints()
  const row = (sourceId: string, destinationId: string) => ({
    sourceId,
    destinationId,
    url: gone,
    disabledAt: T0,
    reason: "HTTP 410 Gone"
  })
  assert.deepStrictEqual(disabled, [row("app", "crm"), row("web", "crm"), row("web", "webhooks")])
})

const run: Upgrade = (old, store) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.provide(writeAsTheOldBuild, old))
    yield* Effect.scoped(Effect.provide(openedByThisBuild, store))
  })

const pgSkip = skipUnlessCi("the PostgreSQL migration test", await postgresUnavailable())

describe("migration 14: disabled endpoints by (source, destination, URL)", () => {
  it.live("SQLite", () => onSqlite(run))

  it.live.skipIf(pgSkip)("PostgreSQL", () => onPg(run))
})
