import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, FileSystem, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Path from "node:path"
import { MessageLog } from "../../src/store/MessageLog.js"
import { migrate, migrations, migrationsTable } from "../../src/store/Migrations.js"
import { Outbox } from "../../src/store/Outbox.js"
import type { MessageIdLogOptions } from "../../src/store/sqlite/MessageIdLog.js"
import { SqliteHotPaths } from "../../src/store/sqlite/SqliteConnection.js"
import * as SqliteConnection from "../../src/store/sqlite/SqliteConnection.js"
import { loadDriver } from "../../src/store/sqlite/SqliteDriver.js"
import * as SqliteStore from "../../src/store/sqlite/SqliteStore.js"
import { layerSqlite } from "../../src/store/Store.js"
import { pendingSleeps } from "../support/pendingSleeps.js"
import { body, entry } from "./storeSuite.js"

/** An id the tests put in the indexes first, greater than theirs: their ids then go to the log. */
const edge = "zz"

/** Reads the file beside the store's own connection: what the log and the two indexes by message id hold. */
const tables = (filename: string) =>
  Effect.sync(() => {
    const db = new (loadDriver().Database)(filename)
    try {
      const ids = (query: string) => (db.prepare(query).pluck(true).all() as Array<string>).sort()
      return {
        log: ids("SELECT message_id FROM message_id_log"),
        seen: ids("SELECT message_id FROM seen_messages"),
        jobs: ids("SELECT message_id FROM message_jobs")
      }
    } finally {
      db.close()
    }
  })

/** Waits (in real time, `tries` times 10 ms at most) for the store's thread to answer what the Clock started. */
const eventually = <A>(read: Effect.Effect<A>, done: (a: A) => boolean, tries = 300) =>
  Effect.gen(function*() {
    for (let i = 0; i < tries; i++) {
      const value = yield* read
      if (done(value)) return value
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
    return yield* read
  })

/**
 * Moves the Clock `seconds` forward a second at a time, each step once the merge loop sleeps again (on the clock of
 * `sleeps`). A look that finds nothing due waits for the store's thread in real time, which the TestClock does not
 * wait for: one jump of several seconds could pass while it waits, and leave its next sleep after the jump's end.
 */
const advance = (sleeps: Effect.Effect<ReadonlyArray<number>>, seconds: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < seconds; i++) {
      const now = yield* Clock.currentTimeMillis
      yield* eventually(sleeps, (pending) => pending.some((at) => at <= now + 1000))
      yield* TestClock.adjust("1 second")
    }
  })

const tempFile = Effect.map(
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped()),
  (directory) => Path.join(directory, "hookrelay.db")
).pipe(Effect.provide(NodeFileSystem.layer))

/** The store's connection on a new file, migrated up to (not including) migration `number`, as an older build left it. */
const migratedBefore = (number: number) =>
  Effect.gen(function*() {
    const filename = yield* tempFile
    const context = yield* Layer.build(SqliteConnection.layer(filename))
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => Number.parseInt(name) < number))
    yield* Migrator.make({})({ loader: Migrator.fromRecord(before), table: migrationsTable }).pipe(
      Effect.provide(context)
    )
    return { context, filename, sql: Context.get(context, SqlClient.SqlClient) }
  })

/** Builds the SQLite store on `filename` in this scope; answers it, and the sleeps pending on its clock. */
const openStore = (filename: string, messageIdLog: MessageIdLogOptions) =>
  Effect.gen(function*() {
    const { provide, sleeps } = yield* pendingSleeps
    const context = yield* provide(
      Layer.build(layerSqlite({ filename, checkpoints: false, reader: false, messageIdLog }))
    )
    return { outbox: Context.get(context, Outbox), messageLog: Context.get(context, MessageLog), sleeps }
  })

describe("MessageIdLog (SQLite: ingest's ids logged, merged into the indexes later)", () => {
  it.effect("merges once the oldest row is maxAge old, driven by the Clock; dedupe and look-ups answer alike", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const { messageLog, outbox, sleeps } = yield* openStore(filename, {
        interval: "1 second",
        maxAge: "10 seconds",
        minRows: 1000
      })
      const now = yield* Clock.currentTimeMillis
      yield* outbox.enqueue("web", [entry(edge)], now)
      yield* outbox.enqueue("web", [entry("a"), entry("b"), { messageId: "f", filtered: true }], now)
      yield* outbox.insertJobs([{ sourceId: "web", messageId: "aud-1", kind: "audience", body: body("{}") }], now)
      const logged = { log: ["a", "aud-1", "b", "f"], seen: [edge], jobs: [edge] }
      assert.deepStrictEqual(yield* tables(filename), logged)
      assert.deepStrictEqual((yield* messageLog.jobsForMessage("a")).map((job) => job.messageId), ["a"])

      yield* advance(sleeps, 9)
      assert.deepStrictEqual(yield* eventually(tables(filename), () => false, 20), logged, "young and few: not yet")

      yield* advance(sleeps, 2)
      const merged = yield* eventually(tables(filename), (t) => t.log.length === 0)
      assert.deepStrictEqual(merged, { log: [], seen: ["a", "b", "f", edge], jobs: ["a", "aud-1", "b", edge] })

      const again = yield* outbox.enqueue("web", [entry("a"), { messageId: "f", filtered: true }, entry("aud-1")], now)
      assert.deepStrictEqual(again.duplicateMessageIds, ["a", "f"], "the audience job's id is no message seen")
      assert.deepStrictEqual((yield* messageLog.jobsForMessage("b")).map((job) => job.messageId), ["b"])
      assert.deepStrictEqual((yield* messageLog.jobsForMessage("aud-1")).map((job) => job.kind).sort(), [
        "audience",
        "message"
      ])
    }))

  it.effect("jobs the product makes itself (audiences, deletions) are merged by age too, with no ingest after them", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const { outbox, sleeps } = yield* openStore(filename, {
        interval: "1 second",
        maxAge: "10 seconds",
        minRows: 1000
      })
      const now = yield* Clock.currentTimeMillis
      yield* outbox.insertJobs([{ sourceId: "web", messageId: "aud-1", kind: "audience", body: body("{}") }], now)
      assert.deepStrictEqual(yield* tables(filename), { log: ["aud-1"], seen: [], jobs: [] })
      yield* advance(sleeps, 11)
      const merged = yield* eventually(tables(filename), (t) => t.log.length === 0)
      assert.deepStrictEqual(merged, { log: [], seen: [], jobs: ["aud-1"] })
    }))

  it.effect("merges at the next look once the log holds minRows rows", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      const { outbox, sleeps } = yield* openStore(filename, {
        interval: "1 second",
        maxAge: "1 hour",
        minRows: 50,
        step: 7
      })
      const now = yield* Clock.currentTimeMillis
      const ids = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, "0")}`)
      yield* outbox.enqueue("web", [entry(edge)], now)
      yield* outbox.enqueue("web", ids.map((id) => entry(id)), now)
      assert.strictEqual((yield* tables(filename)).log.length, 60)
      yield* advance(sleeps, 1)
      const merged = yield* eventually(tables(filename), (t) => t.log.length === 0)
      assert.deepStrictEqual(merged, { log: [], seen: [...ids, edge], jobs: [...ids, edge] })
      assert.strictEqual((yield* outbox.enqueue("web", ids.map((id) => entry(id)), now)).duplicates, 60)
    }))

  it.effect("a log left unmerged (a killed process) is merged at start; an orderly stop merges its own", () =>
    Effect.gen(function*() {
      const filename = yield* tempFile
      // The store's connection alone, without the merges, as a process killed before its next merge leaves the file.
      yield* Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(SqliteConnection.layer(filename))
        yield* Effect.provide(migrate, context)
        const hot = Context.get(context, SqliteHotPaths)
        yield* hot.enqueue({ sourceId: "web", entries: [entry(edge)], now: 1000, options: undefined })
        yield* hot.enqueue({
          sourceId: "web",
          entries: [entry("a"), { messageId: "f", filtered: true }],
          now: 1000,
          options: undefined
        })
      }))
      assert.deepStrictEqual(yield* tables(filename), { log: ["a", "f"], seen: [edge], jobs: [edge] })

      const never = { interval: "1 second", maxAge: "1 day", minRows: 1_000_000 } as const
      yield* Effect.scoped(Effect.gen(function*() {
        const { outbox } = yield* openStore(filename, never)
        assert.deepStrictEqual(yield* tables(filename), { log: [], seen: ["a", "f", edge], jobs: ["a", edge] })
        const again = yield* outbox.enqueue("web", [entry("a"), { messageId: "f", filtered: true }, entry("b")], 2000)
        assert.deepStrictEqual(again.duplicateMessageIds, ["a", "f"])
        assert.deepStrictEqual((yield* tables(filename)).log, ["b"])
      }))
      assert.deepStrictEqual(yield* tables(filename), {
        log: [],
        seen: ["a", "b", "f", edge],
        jobs: ["a", "b", edge]
      })
    }))

  it.effect("migration 9 indexes the jobs stored before it by message id, and drops jobs_message", () =>
    Effect.gen(function*() {
      const { context, filename, sql } = yield* migratedBefore(9)
      yield* sql`
        INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at)
        VALUES ('j1', 'web', 'm1', 'message', X'', 'delivered', 1, 1), ('j2', 'app', 'm1', 'message', X'', 'pending', 2, 2),
          ('j3', 'web', 'd1', 'delete', X'', 'pending', 3, 3)`
      yield* Effect.provide(migrate, context)

      assert.deepStrictEqual(yield* tables(filename), { log: [], seen: [], jobs: ["d1", "m1", "m1"] })
      const indexes = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE name = 'jobs_message'`
      assert.deepStrictEqual(indexes, [])
      const store = yield* Effect.provide(SqliteStore.make, context)
      assert.deepStrictEqual((yield* Context.get(store, MessageLog).jobsForMessage("m1")).map((job) => job.id), [
        "j1",
        "j2"
      ])
    }))

  it.effect("migration 10: a store migrated by migration 9 as first shipped stops logging ingest's jobs by trigger", () =>
    Effect.gen(function*() {
      const { context, sql } = yield* migratedBefore(10)
      const insertJob = (id: string, messageId: string, kind: string) =>
        sql`
          INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at)
          VALUES (${id}, 'web', ${messageId}, ${kind}, X'', 'pending', 1, 1)`
      const log = sql<{ message_id: string; dedupe: number }>`
        SELECT message_id, dedupe FROM message_id_log ORDER BY rowid`
      yield* insertJob("j1", "m1", "message")
      assert.deepStrictEqual(yield* log, [{ message_id: "m1", dedupe: 1 }], "the trigger as first shipped")

      yield* Effect.provide(migrate, context)
      yield* insertJob("j2", "m2", "message")
      yield* insertJob("j3", "aud-1", "audience")
      assert.deepStrictEqual(yield* log, [{ message_id: "m1", dedupe: 1 }, { message_id: "aud-1", dedupe: 0 }])
    }))

  describe("the merge on the thread", () => {
    const enqueue = (hot: SqliteHotPaths["Service"], messageIds: ReadonlyArray<string>, now: number) =>
      hot.enqueue({ sourceId: "s1", entries: messageIds.map((id) => entry(id)), now, options: undefined })
    /** The store's thread on a new file whose indexes hold `edge`: the ids of the tests go to the log. */
    const thread = Effect.gen(function*() {
      const filename = yield* tempFile
      const context = yield* Layer.build(SqliteConnection.layer(filename))
      yield* Effect.provide(migrate, context)
      const hot = Context.get(context, SqliteHotPaths)
      yield* enqueue(hot, [edge], 1)
      return { filename, sql: Context.get(context, SqlClient.SqlClient), hot }
    })
    const everything = { minRows: 0, olderThan: Number.POSITIVE_INFINITY, maxRows: 1000 }

    it.effect("keeps what is logged during a merge for the next one, and counts it as seen meanwhile", () =>
      Effect.gen(function*() {
        const { filename, hot } = yield* thread
        const early = Array.from({ length: 10 }, (_, i) => `early-${i}`)
        yield* enqueue(hot, early, 1000)
        assert.deepStrictEqual(yield* hot.merge({ ...everything, limit: 4 }), { merged: 4, done: false, left: 0 })
        yield* enqueue(hot, ["late"], 1001)
        assert.deepStrictEqual(yield* hot.merge({ ...everything, limit: 4 }), { merged: 4, done: false, left: 0 })
        assert.deepStrictEqual(yield* hot.merge({ ...everything, limit: 4 }), { merged: 2, done: true, left: 0 })

        assert.deepStrictEqual(yield* tables(filename), {
          log: ["late"],
          seen: [...early, edge],
          jobs: [...early, edge]
        })
        const again = yield* enqueue(hot, [...early, "late"], 1002)
        assert.strictEqual(again.duplicates, 11)
        assert.deepStrictEqual(yield* hot.merge({ minRows: 5, olderThan: 0, limit: 4, maxRows: 1000 }), {
          merged: 0,
          done: true,
          left: 1
        })
      }))

    it.effect("ids beyond the greatest one indexed are indexed at once; any other goes to the log", () =>
      Effect.gen(function*() {
        const { filename, hot, sql } = yield* thread
        // Time-ordered, as analytics-node's: each beyond the last.
        const ordered = ["zz-2", "zz-3", "zz-1"]
        assert.strictEqual((yield* enqueue(hot, ordered, 1000)).accepted, 3)
        assert.deepStrictEqual(yield* tables(filename), {
          log: [],
          seen: [edge, ...[...ordered].sort()],
          jobs: [edge, ...[...ordered].sort()]
        })
        // Below the edge (a random id, or a late one), and one beyond it in the same request.
        assert.strictEqual((yield* enqueue(hot, ["m", "zz-4"], 1001)).accepted, 2)
        assert.deepStrictEqual((yield* tables(filename)).log, ["m"])
        // Each refused again, wherever it is: in the index at the edge, in memory, in the index after a merge.
        assert.strictEqual((yield* enqueue(hot, ["zz-1", "zz-4", "m"], 1002)).duplicates, 3)
        yield* hot.merge({ ...everything, limit: 100 })
        assert.strictEqual((yield* enqueue(hot, ["zz-1", "m"], 1003)).duplicates, 2)
        // An edge that lags behind the index (its rows were written by another hand) still refuses what it holds.
        yield* sql`INSERT INTO seen_messages (source_id, message_id, seen_at) VALUES ('s1', 'zzz', 1000)`
        assert.strictEqual((yield* enqueue(hot, ["zzz"], 1004)).duplicates, 1)
      }))

    it.effect("merges at most maxRows rows at a time, the oldest first", () =>
      Effect.gen(function*() {
        const { filename, hot } = yield* thread
        const first = ["y1", "y2", "y3"]
        yield* enqueue(hot, first, 1000)
        yield* enqueue(hot, ["a1", "a2"], 1001)
        assert.deepStrictEqual(yield* hot.merge({ ...everything, maxRows: 3, limit: 2 }), {
          merged: 2,
          done: false,
          left: 0
        })
        assert.deepStrictEqual(yield* hot.merge({ ...everything, maxRows: 3, limit: 2 }), {
          merged: 1,
          done: true,
          left: 2
        })
        assert.deepStrictEqual(yield* tables(filename), {
          log: ["a1", "a2"],
          seen: [...first, edge],
          jobs: [...first, edge]
        })
        assert.strictEqual((yield* enqueue(hot, [...first, "a1", "a2"], 1002)).duplicates, 5)
      }))

    it.effect("a job deleted before its merge gets no look-up entry; one deleted after loses its entry", () =>
      Effect.gen(function*() {
        const { filename, hot, sql } = yield* thread
        yield* enqueue(hot, ["m1", "m2"], 1000)
        yield* sql`DELETE FROM jobs WHERE message_id = 'm1'`
        yield* hot.merge({ ...everything, limit: 100 })
        assert.deepStrictEqual(yield* tables(filename), { log: [], seen: ["m1", "m2", edge], jobs: ["m2", edge] })
        yield* sql`DELETE FROM jobs WHERE message_id = 'm2'`
        assert.deepStrictEqual((yield* tables(filename)).jobs, [edge])
      }))
  })
})
