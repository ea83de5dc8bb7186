import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { DeletionRequests } from "../../src/store/DeletionRequests.js"
import { migrations, migrationsTable } from "../../src/store/Migrations.js"
import { dayMs } from "../../src/store/Rows.js"
import { Usage } from "../../src/store/Usage.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { onPg, onSqlite, type Upgrade } from "./upgradeSupport.js"

/**
 * Migration 15 (REFERENCE §5, §11): the usage rows written when there was one destination keep the source's counters,
 * and their delivered, dead and latency become the destination `webhooks`'; a delete notice recorded then is the
 * destination `webhooks`' notice.
 */

const day = 20_400
const now = day * dayMs + 1000

const before15 = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < 15))
const migrateBefore15 = Migrator.make({})({ loader: Migrator.fromRecord(before15), table: migrationsTable })

const writeAsTheOldBuild = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateBefore15
  // One day of the source: on PostgreSQL in two of its shards (migration 6), read as one.
  const counters = (apiCalls: number, messages: number, filtered: number, delivered: number, dead: number) => ({
    source_id: "web",
    day,
    api_calls: apiCalls,
    messages,
    filtered,
    delivered,
    dead,
    latency_ms: delivered * 80,
    latency_jobs: delivered
  })
  yield* sql.onDialectOrElse({
    pg: () =>
      sql`INSERT INTO usage_daily ${
        sql.insert([{ ...counters(3, 5, 1, 4, 1), shard: 0 }, { ...counters(2, 2, 0, 2, 0), shard: 1 }])
      }`,
    orElse: () => sql`INSERT INTO usage_daily ${sql.insert(counters(5, 7, 1, 6, 1))}`
  })
  yield* sql`INSERT INTO deletion_requests (id, user_id, source_ids, created_at, jobs_removed)
    VALUES ('del-0', 'u1', '["web"]', ${now}, 0)`
  yield* sql`INSERT INTO jobs (id, source_id, message_id, user_id, kind, body, status, created_at, next_due_at)
    VALUES ('job-0', 'web', 'del-0', 'u1', 'delete', ${new Uint8Array([123, 125])}, 'pending', ${now}, ${now})`
  yield* sql`INSERT INTO deletion_notifications (deletion_id, source_id, job_id) VALUES ('del-0', 'web', 'job-0')`
})

const openedByThisBuild = Effect.gen(function*() {
  const usage = yield* Usage
  const [source] = yield* usage.usage("web", now, 1)
  assert.deepStrictEqual(source, {
    day: "2025-11-08",
    apiCalls: 5,
    messages: 7,
    filtered: 1,
    delivered: 6,
    dead: 1,
    averageLatencyMs: 80
  })
  assert.deepStrictEqual(yield* usage.usage("web", now, 1, "webhooks"), [source!])
  // Another destination had no jobs then; the source's calls and messages are the same.
  assert.deepStrictEqual(yield* usage.usage("web", now, 1, "crm"), [
    { ...source!, delivered: 0, dead: 0, averageLatencyMs: null }
  ])
  // The new keys take more: the source's, and a destination's.
  yield* usage.addUsage("web", now, { apiCalls: 1, messages: 2 })
  yield* usage.addUsage("web", now, { delivered: 2, dead: 1 }, "crm")
  const [crm] = yield* usage.usage("web", now, 1, "crm")
  assert.deepStrictEqual([crm!.apiCalls, crm!.messages, crm!.delivered, crm!.dead], [6, 9, 2, 1])
  const [all] = yield* usage.usage("web", now, 1)
  assert.deepStrictEqual([all!.apiCalls, all!.messages, all!.delivered, all!.dead], [6, 9, 8, 2])

  const deletion = Option.getOrThrow(yield* (yield* DeletionRequests).getDeletion("del-0"))
  assert.deepStrictEqual(
    deletion.notifications.map((n) => [n.sourceId, n.destinationId, n.jobId, Option.isSome(n.job)]),
    [["web", "webhooks", "job-0", true]]
  )
})

const run: Upgrade = (old, store) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.provide(writeAsTheOldBuild, old))
    yield* Effect.scoped(Effect.provide(openedByThisBuild, store))
  })

const pgSkip = skipUnlessCi("the PostgreSQL migration test", await postgresUnavailable())

describe("migration 15: usage and delete notices per destination", () => {
  it.live("SQLite", () => onSqlite(run))

  it.live.skipIf(pgSkip)("PostgreSQL", () => onPg(run))
})
