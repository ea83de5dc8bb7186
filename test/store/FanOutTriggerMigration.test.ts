import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { migrations, migrationsTable } from "../../src/store/Migrations.js"
import { Outbox } from "../../src/store/Outbox.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { body, second, T0, text } from "./storeFixtures.js"
import { onPg, onSqlite, type Upgrade } from "./upgradeSupport.js"

/**
 * Migration 22: SQLite's fan-out trigger fires for statements that name `fan_out` (the claims do). A row stored
 * carrying other destinations before it still makes their jobs when claimed after it, each with the message's body,
 * and completing the jobs makes nothing more. PostgreSQL's trigger is unchanged: the same test holds there.
 */

const before22 = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < 22))
const migrateBefore22 = Migrator.make({})({ loader: Migrator.fromRecord(before22), table: migrationsTable })

const writeAsTheOldBuild = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateBefore22
  const row = (id: string, messageId: string, fanOut: string | null, count: number) =>
    sql`
      INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, status, created_at,
        next_due_at, message_type, event, fan_out, fan_out_count)
      VALUES (${id}, 'web', 'webhooks', ${messageId}, 'alice', 'message', ${body(`{"m":"${messageId}"}`)},
        'pending', ${T0}, ${T0}, 'track', 'Clicked', ${fanOut}, ${count})`
  yield* row("00019a9fbd9c0000000a", "carrier", `["crm","warehouse"]`, 2)
  yield* row("00019a9fbd9c0000000b", "plain", null, 0)
})

const openedByThisBuild = Effect.gen(function*() {
  const outbox = yield* Outbox
  const jobs = yield* outbox.claimDue("w", T0, 10, 60 * second)
  assert.deepStrictEqual(
    jobs.map((job) => `${job.messageId}>${job.destinationId} ${text(job.body)}`).sort(),
    [
      `carrier>crm {"m":"carrier"}`,
      `carrier>warehouse {"m":"carrier"}`,
      `carrier>webhooks {"m":"carrier"}`,
      `plain>webhooks {"m":"plain"}`
    ]
  )
  yield* outbox.completeMany("w", jobs.map((job) => ({ _tag: "Delivered", jobId: job.id, at: T0 + second })))
})

const statuses = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ status: string; n: number | string }>`
    SELECT status, count(*) AS n FROM jobs GROUP BY status`
  return rows.map((row) => `${row.status} ${Number(row.n)}`)
})

const run: Upgrade = (old, store) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.provide(writeAsTheOldBuild, old))
    yield* Effect.scoped(Effect.provide(openedByThisBuild, store))
    assert.deepStrictEqual(yield* Effect.scoped(Effect.provide(statuses, old)), ["delivered 4"])
  })

const pgSkip = skipUnlessCi("the PostgreSQL migration test", await postgresUnavailable())

describe("migration 22: the fan-out trigger named on fan_out", () => {
  it.live("SQLite", () => onSqlite(run))

  it.live.skipIf(pgSkip)("PostgreSQL", () => onPg(run))
})
