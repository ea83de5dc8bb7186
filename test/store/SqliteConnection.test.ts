import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, FileSystem, Layer, Result, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { migrate } from "../../src/store/Migrations.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import { SqliteHotPaths, SqliteReader } from "../../src/store/sqlite/SqliteConnection.js"
import * as SqliteConnection from "../../src/store/sqlite/SqliteConnection.js"
import { layerOnSqliteConnection } from "../../src/store/Store.js"
import { Usage } from "../../src/store/Usage.js"
import { entry } from "./storeSuite.js"

/** Holds a transaction open on the SqlClient until `finish`, after `before` ran inside it. */
const openTransaction = (before: Effect.Effect<unknown, unknown, SqlClient.SqlClient>, fails = false) =>
  Effect.gen(function*() {
    const inside = yield* Deferred.make<void>()
    const finish = yield* Deferred.make<void>()
    const transaction = yield* Effect.forkChild(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* before
          yield* Deferred.succeed(inside, undefined)
          yield* Deferred.await(finish)
          if (fails) return yield* Effect.fail("rolled back" as const)
        })))
    )
    yield* Deferred.await(inside)
    return { finish: Effect.andThen(Deferred.succeed(finish, undefined), Fiber.await(transaction)) }
  })

describe("SqliteConnection (the SQLite thread)", () => {
  // Live clock: the thread is real, and the short sleep only gives it time to (wrongly) answer.
  it.live("a statement of another fiber waits for a transaction in progress instead of landing inside it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER)`
      const open = yield* openTransaction(sql`INSERT INTO t (n) VALUES (1)`, true)
      const outside = yield* Effect.forkChild(sql`INSERT INTO t (n) VALUES (2)`)
      yield* Effect.sleep("20 millis")
      assert.isUndefined(outside.pollUnsafe(), "the statement waits for the transaction's lock")
      yield* open.finish
      yield* Fiber.join(outside)
      // The transaction was rolled back; the other fiber's insert was not part of it.
      const rows = yield* sql<{ n: number }>`SELECT n FROM t`
      assert.deepStrictEqual(rows.map((row) => row.n), [2])
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.live("a hot transaction waits for a SqlClient transaction in progress, then sees what it committed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hot = yield* SqliteHotPaths
      yield* migrate
      const open = yield* openTransaction(sql`
        INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at)
        VALUES ('j1', 's1', 'm1', 'message', ${new Uint8Array([123, 125])}, 'pending', 1000, 1000)`)
      const claiming = yield* Effect.forkChild(
        hot.claim({ owner: "me", now: 2000, limit: 10, leaseMs: 60_000, excludeSourceIds: [], expired: true })
      )
      yield* Effect.sleep("20 millis")
      assert.isUndefined(claiming.pollUnsafe(), "the claim waits for the transaction's lock")
      yield* open.finish
      const claimed = yield* Fiber.join(claiming)
      assert.deepStrictEqual(claimed.map((job) => [job.id, job.leaseExpiresAt]), [["j1", 62_000]])
      assert.deepStrictEqual(Array.from(claimed[0]!.body), [123, 125])
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.live("a statement waiting for the lock can be interrupted and is never sent; one already sent still runs", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER)`
      const open = yield* openTransaction(sql`INSERT INTO t (n) VALUES (1)`)
      const waiting = yield* Effect.forkChild(sql`INSERT INTO t (n) VALUES (2)`)
      yield* Effect.sleep("20 millis")
      yield* Fiber.interrupt(waiting)
      yield* open.finish
      // The interrupted statement left the lock's queue without ever being sent.
      const sent = yield* Effect.forkChild(sql`INSERT INTO t (n) VALUES (3)`)
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 5 }))
      yield* Fiber.interrupt(sent)
      const rows = yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`
      assert.deepStrictEqual(rows.map((row) => row.n), [1, 3])
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.effect("a failing statement is a SqlError with SQLite's code, and the connection goes on", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER NOT NULL)`
      const error = yield* sql`INSERT INTO t (n) VALUES (NULL)`.pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      assert.strictEqual((error.reason.cause as { code?: string }).code, "SQLITE_CONSTRAINT_NOTNULL")
      yield* sql`INSERT INTO t (n) VALUES (1)`
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM t`
      assert.strictEqual(rows[0]!.n, 1)
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  /** The ids dedupe counts as seen in the file: merged into `seen_messages` or still in the log (migration 9). */
  const seenIds = (sql: SqlClient.SqlClient, like: string) =>
    Effect.map(
      sql<{ message_id: string }>`
        SELECT message_id FROM seen_messages WHERE message_id LIKE ${like}
        UNION SELECT message_id FROM message_id_log WHERE dedupe = 1 AND message_id LIKE ${like}
        ORDER BY message_id`,
      (rows) => rows.map((row) => row.message_id)
    )

  /** Sends each id again, one request each: the ids accepted as new. */
  const acceptedAgain = (hot: SqliteHotPaths["Service"], messageIds: ReadonlyArray<string>) =>
    Effect.map(
      Effect.forEach(messageIds, (messageId) =>
        Effect.map(
          hot.enqueue({ sourceId: "s1", entries: [entry(messageId)], now: 2000, options: undefined }),
          (result) => result.accepted === 1 ? [messageId] : []
        )),
      (accepted) => accepted.flat()
    )

  it.effect("a failing hot transaction rolls back whole", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hot = yield* SqliteHotPaths
      yield* migrate
      // The second entry's body is not bindable: the first entry's seen row and job must not stay behind.
      const error = yield* hot.enqueue({
        sourceId: "s1",
        entries: [{ messageId: "m1", body: new Uint8Array([1]) }, { messageId: "m2", body: {} as Uint8Array }],
        now: 1000,
        options: undefined
      }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      const jobs = yield* sql<{ n: number }>`SELECT count(*) AS n FROM jobs`
      assert.deepStrictEqual([jobs[0]!.n, yield* seenIds(sql, "m%")], [0, []])
      // Nor in the thread's memory of recent ids: sent again, the message is new.
      const again = yield* hot.enqueue({
        sourceId: "s1",
        entries: [{ messageId: "m1", body: new Uint8Array([1]) }],
        now: 1001,
        options: undefined
      })
      assert.strictEqual(again.accepted, 1)
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  describe("ingest requests queued behind a busy thread (group commit)", () => {
    /** A file database (WAL) on the thread, migrated; `walFrames` counts what was written since the last `resetWal`. */
    const fileThread = Effect.gen(function*() {
      const directory = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped())
      const context = yield* Layer.build(SqliteConnection.layer(`${directory}/hookrelay.db`))
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* Effect.provide(migrate, context)
      const checkpoint = (mode: string) =>
        Effect.map(sql.unsafe<{ log: number }>(`PRAGMA wal_checkpoint(${mode})`), (rows) => rows[0]!.log)
      return {
        sql,
        hot: Context.get(context, SqliteHotPaths),
        resetWal: checkpoint("TRUNCATE"),
        walFrames: checkpoint("PASSIVE")
      }
    }).pipe(Effect.provide(NodeFileSystem.layer))

    /** Keeps the thread busy for a while (~0.1–0.5 s): what is sent meanwhile queues up behind it. */
    const busyThread = (sql: SqlClient.SqlClient) =>
      sql`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3000000) SELECT count(*) AS n FROM c`

    const track = (hot: SqliteHotPaths["Service"], messageId: string, bad = false) =>
      hot.enqueue({
        sourceId: "s1",
        // A body that is not bytes binds as NULL, which the job row refuses: that request fails.
        entries: [bad ? { messageId, body: {} as Uint8Array } : entry(messageId)],
        now: 1000,
        options: undefined
      })

    // Live clock: the thread is real; the short sleep lets the busy statement reach it first.
    it.live("each is answered on its own; one that fails rolls back alone; together they write far fewer pages", () =>
      Effect.gen(function*() {
        const { hot, resetWal, sql, walFrames } = yield* fileThread
        const ids = (prefix: string) => Array.from({ length: 10 }, (_, i) => `${prefix}${i}`)

        // One at a time: each request its own commit.
        yield* resetWal
        for (const id of ids("one-")) yield* track(hot, id)
        const framesOneByOne = yield* walFrames

        yield* resetWal
        const busy = yield* Effect.forkChild(busyThread(sql))
        yield* Effect.sleep("5 millis")
        const results = yield* Effect.all(
          ids("queued-").map((id, i) => Effect.result(track(hot, id, i === 4))),
          { concurrency: "unbounded" }
        )
        yield* Fiber.join(busy)
        const framesQueued = yield* walFrames

        assert.deepStrictEqual(
          results.map((result) => Result.isSuccess(result) ? result.success.accepted : result.failure._tag),
          [1, 1, 1, 1, "SqlError", 1, 1, 1, 1, 1]
        )
        const stored = yield* sql<{ message_id: string }>`
          SELECT message_id FROM jobs WHERE message_id LIKE 'queued-%' ORDER BY message_id`
        const committed = ids("queued-").filter((_, i) => i !== 4)
        assert.deepStrictEqual(stored.map((row) => row.message_id), committed)
        assert.deepStrictEqual(yield* seenIds(sql, "queued-%"), committed, "the failed request's dedupe row is gone")
        assert.deepStrictEqual(yield* acceptedAgain(hot, ids("queued-")), ["queued-4"], "and so is its id in memory")
        // Ten commits write the pages they touch ten times; queued up, the same requests wrote them about once.
        assert.isAbove(framesOneByOne, 30)
        assert.isBelow(framesQueued * 3, framesOneByOne, `${framesQueued} frames queued, ${framesOneByOne} one by one`)
      }))

    // A full database fails a statement and may end the whole transaction (SQLite's SQLITE_FULL): either way, what each
    // request is answered must be what is stored, with nothing of a failed request kept and nothing run outside the
    // group's transaction.
    it.live("on a full database each request's answer is what is stored", () =>
      Effect.gen(function*() {
        const { hot, sql } = yield* fileThread
        const pages = yield* sql.unsafe<{ page_count: number }>("PRAGMA page_count")
        yield* sql.unsafe(`PRAGMA max_page_count = ${pages[0]!.page_count + 30}`)
        const busy = yield* Effect.forkChild(busyThread(sql))
        yield* Effect.sleep("5 millis")
        const large = new Uint8Array(400_000).fill(32)
        const ids = Array.from({ length: 8 }, (_, i) => `full-${i}`)
        const results = yield* Effect.all(
          ids.map((messageId, i) =>
            Effect.result(hot.enqueue({
              sourceId: "s1",
              entries: [i === 3 ? { messageId, body: large } : entry(messageId)],
              now: 1000,
              options: undefined
            }))
          ),
          { concurrency: "unbounded" }
        )
        yield* Fiber.join(busy)
        const failed = results.flatMap((result, i) => Result.isFailure(result) ? [ids[i]!] : [])
        assert.include(failed, "full-3")
        assert.match(
          String((results[3] as Result.Failure<unknown, { message: string }>).failure.message),
          /full/i
        )
        const stored = yield* sql<{ message_id: string }>`SELECT message_id FROM jobs ORDER BY message_id`
        const answeredOk = ids.filter((id) => !failed.includes(id))
        assert.deepStrictEqual(stored.map((row) => row.message_id), answeredOk)
        assert.deepStrictEqual(yield* seenIds(sql, "full-%"), answeredOk)
        yield* sql.unsafe(`PRAGMA max_page_count = 1000000`)
        assert.deepStrictEqual(yield* acceptedAgain(hot, ids), failed)
      }))

    it.live("a repeated message id among them is accepted once, as one after the other", () =>
      Effect.gen(function*() {
        const { hot, sql } = yield* fileThread
        const busy = yield* Effect.forkChild(busyThread(sql))
        yield* Effect.sleep("5 millis")
        const results = yield* Effect.all([track(hot, "m1"), track(hot, "m2"), track(hot, "m1")], {
          concurrency: "unbounded"
        })
        yield* Fiber.join(busy)
        assert.deepStrictEqual(results.map((result) => [result.accepted, result.duplicates]), [[1, 0], [1, 0], [0, 1]])
        const jobs = yield* sql<{ n: number }>`SELECT count(*) AS n FROM jobs`
        assert.strictEqual(jobs[0]!.n, 2)
      }))
  })

  it.effect("a completion batch that cannot be encoded fails with a SqlError, writes nothing, and the thread goes on", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hot = yield* SqliteHotPaths
      yield* migrate
      yield* sql`
        INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at, lease_owner)
        VALUES ('j1', 's1', 'm1', 'message', ${new Uint8Array([123, 125])}, 'delivering', 1000, 1000, 'me')`
      const error = yield* hot.complete({
        owner: "me",
        completions: [{ _tag: "Delivered", jobId: "j1", at: 2000, endpointState: { failures: 1n } }],
        attempts: []
      }).pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      const result = yield* hot.complete({
        owner: "me",
        completions: [{ _tag: "Delivered", jobId: "j1", at: 2000 }],
        attempts: [{
          jobId: "j1",
          url: "https://a.test/",
          attempt: 1,
          startedAt: 1500,
          durationMs: 3,
          outcome: "success"
        }]
      })
      assert.deepStrictEqual(result, { applied: ["j1"], refused: [] })
      const rows = yield* sql<{ status: string; attempts: number }>`SELECT status, attempts FROM jobs`
      assert.deepStrictEqual(rows.map((row) => [row.status, row.attempts]), [["delivered", 1]])
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.effect("blobs come back as Buffers", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ b: Uint8Array }>`SELECT X'7b7d' AS b`
      assert.isTrue(Buffer.isBuffer(rows[0]!.b))
      assert.strictEqual(Buffer.from(rows[0]!.b).toString("utf8"), "{}")
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.effect("a database that cannot be opened fails the layer with a SqlError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.scoped(Layer.build(SqliteConnection.layer("/nonexistent-dir/x/hookrelay.db"))).pipe(
        Effect.flip
      )
      assert.strictEqual(error._tag, "SqlError")
      assert.match(error.message, /open the database/)
    }))
})

describe("SqliteConnection closed", () => {
  it.effect("a statement after the thread has stopped fails with a SqlError instead of waiting forever", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(SqliteConnection.layer(":memory:"), scope)
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`CREATE TABLE t (n INTEGER)`
      yield* Scope.close(scope, Exit.void)
      const error = yield* sql`SELECT count(*) AS n FROM t`.pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      assert.match(error.message, /SQLite thread exited/)
    }))
})

describe("SqliteReader (the long reads' read-only connection)", () => {
  /** A file store over the writing connection, with or without the reader; the writer's SqlClient to hold it. */
  const fileStore = (withReader: boolean) =>
    Effect.gen(function*() {
      const directory = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped())
      const filename = `${directory}/hookrelay.db`
      const writer = SqliteConnection.layer(filename)
      const connections = withReader
        ? SqliteConnection.layerReader(filename).pipe(Layer.provideMerge(writer))
        : writer
      const context = yield* Layer.build(layerOnSqliteConnection.pipe(Layer.provideMerge(connections)))
      return {
        context,
        sources: Context.get(context, Sources),
        outbox: Context.get(context, Outbox),
        usageCounts: Context.get(context, Usage),
        messageLog: Context.get(context, MessageLog),
        deadLetters: Context.get(context, DeadLetters),
        filename
      }
    }).pipe(Effect.provide(NodeFileSystem.layer))

  const heldTransaction = (context: Context.Context<SqlClient.SqlClient>) =>
    openTransaction(Effect.void).pipe(Effect.provide(context))

  // Live clock: the threads are real, and the short sleep only gives a queued write time to (wrongly) finish.
  it.live("counts, searches and lookups answer while a transaction holds the writer; each sees what was committed before it", () =>
    Effect.gen(function*() {
      const { context, deadLetters, messageLog, outbox, sources, usageCounts } = yield* fileStore(true)
      yield* sources.upsertSource({ id: "web", writeKey: "wk_reader" }, 1)
      yield* outbox.enqueue("web", [entry("m1", "u1"), entry("m2", "u1")], 10)
      const [dead] = yield* outbox.claimDue("w", 10, 1, 60_000)
      yield* outbox.markDead("w", dead!.id, 11, "410 Gone")

      const open = yield* heldTransaction(context)
      const ingest = yield* Effect.forkChild(outbox.enqueue("web", [entry("m3", "u1")], 12))
      const reads = yield* Effect.all({
        backlog: outbox.backlog(),
        search: messageLog.searchMessages({ userId: "u1", limit: 10 }),
        jobs: messageLog.jobsForMessage("m2"),
        deadLetters: deadLetters.listDeadLetters({ limit: 10 }),
        usage: usageCounts.usage("web", 12, 1)
      }).pipe(Effect.timeoutOrElse({
        duration: "5 seconds",
        orElse: () => Effect.fail("the reads waited for the writer" as const)
      }))
      yield* Effect.sleep("20 millis")
      assert.isUndefined(ingest.pollUnsafe(), "the commit waits for the transaction's lock")

      assert.deepStrictEqual(reads.backlog, { pending: 1, delivering: 0, delivered: 0, dead: 1 })
      assert.deepStrictEqual(reads.search.map((message) => message.messageId).sort(), ["m1", "m2"])
      assert.strictEqual(reads.jobs.length, 1)
      assert.deepStrictEqual(reads.deadLetters.map((job) => job.id), [dead!.id])
      assert.strictEqual(reads.usage[0]!.messages, 2)

      yield* open.finish
      yield* Fiber.join(ingest)
      // Read right after the commit was answered: the reader's next read transaction starts after it.
      assert.strictEqual((yield* outbox.backlog()).pending, 2)
    }))

  it.live("without the reader, the same count waits behind the transaction", () =>
    Effect.gen(function*() {
      const { context, outbox } = yield* fileStore(false)
      const open = yield* heldTransaction(context)
      const counting = yield* Effect.forkChild(outbox.backlog())
      yield* Effect.sleep("50 millis")
      assert.isUndefined(counting.pollUnsafe(), "the count is queued for the writing connection")
      yield* open.finish
      assert.deepStrictEqual(yield* Fiber.join(counting), { pending: 0, delivering: 0, delivered: 0, dead: 0 })
    }))

  it.effect("the reader's connection cannot write", () =>
    Effect.gen(function*() {
      const { filename } = yield* fileStore(true)
      const reader = yield* Effect.provide(SqliteReader, yield* Layer.build(SqliteConnection.layerReader(filename)))
      const error = yield* reader`DELETE FROM jobs`.pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      assert.match(error.message, /readonly/)
    }))
})

describe("SqliteConnection's lock", () => {
  // Live clock: the thread is real.
  it.live("a loop of transactions does not starve a statement waiting for the lock", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER)`
      const loops = 40
      let transactions = 0
      let insertedAfter = -1
      const loop = yield* Effect.forkChild(Effect.repeat(
        sql.withTransaction(Effect.andThen(sql`INSERT INTO t (n) VALUES (1)`, sql`SELECT count(*) FROM t`)).pipe(
          Effect.tap(() => Effect.sync(() => transactions++))
        ),
        { times: loops - 1 }
      ))
      // Once the loop is under way (how far it got is counted, not timed: a loaded machine runs it at its own pace).
      while (transactions < 2) yield* Effect.sleep("1 millis")
      const issuedAfter = transactions
      yield* sql`INSERT INTO t (n) VALUES (2)`
      insertedAfter = transactions
      yield* Fiber.join(loop)
      assert.strictEqual(transactions, loops)
      assert.isBelow(issuedAfter, loops - 3, "the loop was still running when the statement was issued")
      // Served in its turn: after the transaction in progress and perhaps one queued before it (and one more counted
      // before this fiber resumes), not after the loop.
      assert.isAtMost(
        insertedAfter - issuedAfter,
        3,
        `the statement, issued after ${issuedAfter} transactions, ran after ${insertedAfter} of ${loops}`
      )
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))
})

describe("SqliteHotPaths.purge", () => {
  it.effect("deletes the oldest finished jobs of the status asked, with their attempts, a chunk at a time", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const hot = yield* SqliteHotPaths
      yield* migrate
      const job = (id: string, status: string, finishedAt: number, sourceId = "s1") =>
        sql`
          INSERT INTO jobs (id, source_id, message_id, kind, body, status, created_at, next_due_at, finished_at)
          VALUES (${id}, ${sourceId}, ${id}, 'message', ${new Uint8Array([123, 125])}, ${status}, 0, 0, ${finishedAt})`
      const attempt = (jobId: string) =>
        sql`
          INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, outcome)
          VALUES (${jobId}, 'https://a.example', 1, 0, 1, 'success')`
      for (
        const [id, status, at] of [["d1", "delivered", 10], ["d2", "delivered", 20], ["d3", "delivered", 30]] as const
      ) {
        yield* job(id, status, at)
        yield* attempt(id)
      }
      yield* job("x1", "dead", 10)
      yield* job("x2", "dead", 10, "s2")
      const remaining = (table: "jobs" | "attempts") =>
        Effect.map(sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(table)}`, (rows) => rows[0]!.n)

      assert.strictEqual(yield* hot.purge({ status: "delivered", olderThan: 25, limit: 1 }), 1)
      assert.strictEqual(yield* hot.purge({ status: "delivered", olderThan: 25, limit: 1 }), 1)
      assert.strictEqual(yield* hot.purge({ status: "delivered", olderThan: 25, limit: 1 }), 0)
      assert.deepStrictEqual([yield* remaining("jobs"), yield* remaining("attempts")], [3, 1])
      assert.strictEqual(yield* hot.purge({ status: "dead", olderThan: 25, sourceId: "s2", limit: 10 }), 1)
      const left = yield* sql<{ id: string }>`SELECT id FROM jobs ORDER BY id`
      assert.deepStrictEqual(left.map((row) => row.id), ["d3", "x1"])
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))
})
