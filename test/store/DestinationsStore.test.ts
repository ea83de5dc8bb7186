import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { migrations, migrationsTable } from "../../src/store/Migrations.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import { Sources } from "../../src/store/Sources.js"
import { postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"
import { onPg, onSqlite, type Upgrade } from "./upgradeSupport.js"

/**
 * Destinations in the store on both databases. A store as the build before destinations left it (migrations up to 12, written with its own statements) is migrated
 * at start: its source's `webhooks` object is the destination `webhooks`, and its pending and dead jobs are that
 * destination's, delivered and replayed as before (REFERENCE §1a).
 */

const T0 = 1_763_700_000_000
const webhooks = { enabled: true, sharedSecret: "s3cret", endpoints: [{ url: "https://example.com/hook" }] }

const before13 = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < 13))
const migrateBefore13 = Migrator.make({})({ loader: Migrator.fromRecord(before13), table: migrationsTable })

/** What the older build wrote: a source, one pending job and one dead letter. */
const writeAsTheOldBuild = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* migrateBefore13
  const hash = createHash("sha256").update("wk-web", "utf8").digest("hex")
  yield* sql`
    INSERT INTO sources (id, write_key, write_key_hash, webhooks, created_at, updated_at)
    VALUES ('web', 'wk-web', ${hash}, ${JSON.stringify(webhooks)}, ${T0}, ${T0})`
  const body = new TextEncoder().encode("{\"type\":\"track\"}")
  yield* sql`
    INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at)
    VALUES ('job-pending', 'web', 'm-1', 'message', ${body}, 'pending', ${T0}, ${T0})`
  yield* sql`
    INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at, finished_at, last_error)
    VALUES ('job-dead', 'web', 'm-2', 'message', ${body}, 'dead', ${T0}, ${T0}, ${T0}, 'HTTP 500')`
})

/** The current build opens the store: it migrates, then delivers and replays what it found. */
const openedByThisBuild = Effect.gen(function*() {
  const source = Option.getOrThrow(yield* (yield* Sources).getSource("web"))
  assert.deepStrictEqual(source.destinations, [{ id: "webhooks", ...webhooks }])
  assert.deepStrictEqual(source.webhooks, webhooks)

  const [letter] = yield* (yield* DeadLetters).listDeadLetters({ sourceId: "web", limit: 10 })
  assert.deepStrictEqual({ id: letter?.id, destinationId: letter?.destinationId }, {
    id: "job-dead",
    destinationId: "webhooks"
  })
  assert.isTrue(yield* (yield* DeadLetters).replayDeadLetter("job-dead", T0 + 1))

  const claimed = yield* (yield* Outbox).claimDue("w", T0 + 1, 10, 60_000)
  assert.deepStrictEqual(claimed.map((job) => `${job.id}>${job.destinationId}`).sort(), [
    "job-dead>webhooks",
    "job-pending>webhooks"
  ])
  // A body saved now keeps the old layout's `webhooks` column for the destination `webhooks`.
  const saved = yield* (yield* Sources).upsertSource({
    id: "web",
    writeKey: "wk-web",
    destinations: [{ id: "crm", enabled: true, endpoints: [{ url: "https://crm.example.com" }] }],
    webhooks
  }, T0 + 2)
  assert.deepStrictEqual(saved.destinations.map((destination) => destination.id), ["webhooks", "crm"])
})

/**
 * A message with several jobs is stored as one row carrying the others until a claim takes it (migration 21); then
 * its body is stored once (`message_bodies`, each job's `body` empty), kept while any of its jobs is, and dropped with
 * the last, whichever way it goes (here: retention, and a dead-letter purge).
 */
const storedOnce = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const outbox = yield* Outbox
  const purge = yield* Purge
  const bodies = () =>
    Effect.map(sql<{ n: unknown }>`SELECT count(*) AS n FROM message_bodies`, (rows) => Number(rows[0]!.n))
  const jobBytes = () =>
    Effect.map(
      sql<{ n: unknown }>`SELECT coalesce(sum(length(body)), 0) AS n FROM jobs WHERE message_id IN ('m-3', 'm-4')`,
      (rows) => Number(rows[0]!.n)
    )
  const body = new TextEncoder().encode(JSON.stringify({ type: "track", padding: "x".repeat(1000) }))
  yield* outbox.enqueue("web", [
    { messageId: "m-3", body, destinationIds: ["webhooks", "crm", "warehouse"] },
    { messageId: "m-4", body }
  ], T0 + 3)
  const rows = () =>
    Effect.map(sql<{ n: unknown }>`SELECT count(*) AS n FROM jobs WHERE message_id = 'm-3'`, (r) => Number(r[0]!.n))
  assert.strictEqual(yield* rows(), 1, "one row until claimed")
  assert.strictEqual(yield* bodies(), 0)
  assert.strictEqual(yield* jobBytes(), 2 * body.length)
  assert.strictEqual((yield* outbox.backlog()).pending, 4, "the jobs not made yet are pending")

  const jobs = yield* outbox.claimDue("w", T0 + 3, 10, 60_000)
  const ofM3 = jobs.filter((job) => job.messageId === "m-3")
  assert.deepStrictEqual(ofM3.map((job) => job.destinationId).sort(), ["crm", "warehouse", "webhooks"])
  for (const job of ofM3) assert.deepStrictEqual(job.body, body)
  assert.strictEqual(yield* rows(), 3)
  assert.strictEqual(yield* bodies(), 1)
  // The single-destination message keeps its body in its job; the three jobs of the other hold none of their own.
  assert.strictEqual(yield* jobBytes(), body.length)
  yield* outbox.completeMany("w", [
    { _tag: "Delivered", jobId: ofM3[0]!.id, at: T0 + 4 },
    { _tag: "Delivered", jobId: ofM3[1]!.id, at: T0 + 4 },
    { _tag: "Dead", jobId: ofM3[2]!.id, at: T0 + 4, lastError: "HTTP 400" }
  ])
  yield* purge.purgeDelivered(T0 + 5)
  assert.strictEqual(yield* bodies(), 1, "a dead letter still needs it")
  yield* purge.purgeDeadLetters({ olderThan: T0 + 5 })
  assert.strictEqual(yield* bodies(), 0, "dropped with its last job")
})

const run: Upgrade = (old, store) =>
  Effect.gen(function*() {
    yield* Effect.scoped(Effect.provide(writeAsTheOldBuild, old))
    yield* Effect.scoped(Effect.provide(openedByThisBuild, store))
    // The store's own connection, and a plain one on the same database to look at the rows.
    yield* Effect.scoped(Effect.provide(storedOnce, Layer.merge(store, old)))
  })

const pgSkip = skipUnlessCi("the PostgreSQL migration test", await postgresUnavailable())

describe("destinations in the store: migration 13, bodies stored once", () => {
  it.live("SQLite: an older build's store migrates and delivers; a fanned-out body is stored once", () => onSqlite(run))

  it.live.skipIf(pgSkip)(
    "PostgreSQL: an older build's store migrates and delivers; a fanned-out body is stored once",
    () => onPg(run)
  )
})
