import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { MessageLog } from "../../src/store/MessageLog.js"
import type { MessageLogQuery } from "../../src/store/MessageLogQuery.js"
import { migrations, migrationsTable } from "../../src/store/Migrations.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { body, T0 } from "./storeFixtures.js"
import { onPg, onSqlite, type Upgrade } from "./upgradeSupport.js"

/**
 * Migration 20 (REFERENCE §12): SQLite's message log, stored by (source, seq) from then on, keeps the rows written
 * before with their seqs (jobs point at them), and the seqs given after it are above every seq a row or a job holds,
 * a job whose row retention already removed included. PostgreSQL's log is unchanged by it: the same test holds there.
 */

const before20 = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < 20))
const migrateBefore20 = Migrator.make({})({ loader: Migrator.fromRecord(before20), table: migrationsTable })

const oldRows = [
  ["web", "w1", 0],
  ["app", "a1", 1000],
  ["web", "w2", 2000],
  ["web", "w3", 3000],
  ["app", "gone", 4000]
] as const

const writeAsTheOldBuild = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateBefore20
  for (const [sourceId, messageId, at] of oldRows) {
    yield* sql`
      INSERT INTO message_log (source_id, message_id, received_at, type, event, user_id, anonymous_id, job_count)
      VALUES (${sourceId}, ${messageId}, ${T0 + at}, 'track', 'Clicked', 'alice', NULL, 1)`
  }
  // w2's job died: a listing of dead messages reaches its row through the job's log_seq.
  const [w2] = yield* sql<{ seq: unknown }>`SELECT seq FROM message_log WHERE message_id = 'w2'`
  yield* sql`
    INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, status, created_at, next_due_at,
      attempts, finished_at, message_type, event, log_seq)
    VALUES ('00019a9fbd9c0000000a', 'web', 'webhooks', 'w2', 'alice', 'message', ${body("{}")}, 'dead',
      ${T0 + 2000}, ${T0 + 2000}, 1, ${T0 + 2500}, 'track', 'Clicked', ${w2!.seq})`
  // The newest row cut by retention while its job, finished later, stays: its seq is not given again.
  const [newest] = yield* sql<{ seq: unknown }>`SELECT max(seq) AS seq FROM message_log`
  yield* sql`
    INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, status, created_at, next_due_at,
      attempts, finished_at, message_type, event, log_seq)
    VALUES ('00019a9fbd9c0000000b', 'app', 'webhooks', 'gone', 'alice', 'message', ${body("{}")}, 'delivered',
      ${T0 + 4000}, ${T0 + 4000}, 1, ${T0 + 9000}, 'track', 'Clicked', ${newest!.seq})`
  yield* sql`DELETE FROM message_log WHERE message_id = 'gone'`
  return Number(newest!.seq)
})

const listed = (query: MessageLogQuery) =>
  Effect.gen(function*() {
    const page = yield* (yield* MessageLog).listMessages(query)
    return page.messages.map((m) => `${m.sourceId}/${m.messageId}`)
  })

const openedByThisBuild = Effect.gen(function*() {
  assert.deepStrictEqual(yield* listed({ limit: 10 }), ["web/w3", "web/w2", "app/a1", "web/w1"])
  assert.deepStrictEqual(yield* listed({ sourceIds: ["web"], limit: 10 }), ["web/w3", "web/w2", "web/w1"])
  assert.deepStrictEqual(yield* listed({ statuses: ["dead"], limit: 10 }), ["web/w2"])
  yield* (yield* Outbox).enqueue("app", [{ messageId: "a2", type: "track", body: body("{}") }], T0 + 5000)
  assert.deepStrictEqual(yield* listed({ limit: 2 }), ["app/a2", "web/w3"])
  // Retention, source by source: rows received before the cut go, the rest stay.
  yield* (yield* Purge).purgeDelivered(T0 + 2500)
  assert.deepStrictEqual(yield* listed({ limit: 10 }), ["app/a2", "web/w3"])
})

const seqOf = (messageId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ seq: unknown }>`SELECT seq FROM message_log WHERE message_id = ${messageId}`
    return Number(rows[0]!.seq)
  })

const run: Upgrade = (old, store) =>
  Effect.gen(function*() {
    const newestBefore = yield* Effect.scoped(Effect.provide(writeAsTheOldBuild, old))
    yield* Effect.scoped(Effect.provide(openedByThisBuild, store))
    assert.isAbove(yield* Effect.scoped(Effect.provide(seqOf("a2"), old)), newestBefore)
  })

const pgSkip = skipUnlessCi("the PostgreSQL migration test", await postgresUnavailable())

describe("migration 20: the message log by (source, seq)", () => {
  it.live("SQLite", () => onSqlite(run))

  it.live.skipIf(pgSkip)("PostgreSQL", () => onPg(run))
})
