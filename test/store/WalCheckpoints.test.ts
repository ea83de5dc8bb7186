import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, FileSystem, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Path from "node:path"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import * as SqliteConnection from "../../src/store/sqlite/SqliteConnection.js"
import * as WalCheckpoints from "../../src/store/sqlite/WalCheckpoints.js"
import { layerOnSqliteConnection } from "../../src/store/Store.js"
import { mountSmallDisk, smallDiskUnavailable } from "../support/faultStores.js"
import { pendingSleeps } from "../support/pendingSleeps.js"
import { skipUnlessCi } from "../support/services.js"

/** A source and `count` messages of about 600 bytes each, so that every batch adds a few dozen WAL pages. */
const body = new TextEncoder().encode(JSON.stringify({ type: "track", padding: "x".repeat(600) }))
const entries = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => ({ messageId: `${prefix}-${i}`, userId: `user-${i % 50}`, body }))

/** Real time passes (the worker answers through the event loop) while the test's clock stays put. */
const liveSleep = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

const waitUntil = <A>(read: Effect.Effect<A>, done: (value: A) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      const value = yield* read
      if (done(value)) return value
      yield* liveSleep(10)
    }
    return yield* Effect.die(new Error(`timed out waiting for ${what}`))
  })

/**
 * The store (on its SQLite thread) and its checkpoints over one SQLite file in a temporary directory, built in the
 * test's scope; the checkpoints' loop sleeps on a clock whose pending sleeps `sleeps` answers.
 */
const openStore = (options: WalCheckpoints.WalCheckpointOptions, inDirectory?: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const directory = inDirectory ?? (yield* fs.makeTempDirectoryScoped())
    const filename = Path.join(directory, "store.db")
    const context = yield* Layer.build(
      layerOnSqliteConnection.pipe(Layer.provideMerge(SqliteConnection.layer(filename)))
    )
    const { provide, sleeps } = yield* pendingSleeps
    const stats = yield* WalCheckpoints.make(filename, options).pipe(Effect.provide(context), provide)
    return {
      filename,
      stats,
      sources: Context.get(context, Sources),
      outbox: Context.get(context, Outbox),
      context,
      fs,
      sleeps
    }
  })

describe("WAL checkpoints on a worker thread", () => {
  it.live("copy the WAL into the database file while commits go on, and start the WAL over", () =>
    Effect.gen(function*() {
      const { context, filename, fs, outbox, sources, stats } = yield* openStore({
        interval: "5 millis",
        maxWalBytes: 256 * 1024
      })
      const sql = SqlClient.SqlClient.pipe(Effect.provide(context))
      const autocheckpoint = yield* Effect.flatMap(
        sql,
        (sql) => sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`
      )
      assert.strictEqual(autocheckpoint[0]!.wal_autocheckpoint, 0, "the main connection never checkpoints on commit")

      yield* sources.upsertSource({ id: "web", writeKey: "k" }, 1)
      const startSize = Number((yield* fs.stat(filename)).size)
      let largestWal = 0
      for (let batch = 0; batch < 60; batch++) {
        yield* outbox.enqueue("web", entries(`b${batch}`, 100), 1_000 + batch)
        largestWal = Math.max(largestWal, (yield* stats).last?.log ?? 0)
        // A server lets its event loop turn between requests; the worker's answers come in then.
        yield* liveSleep(1)
      }
      const afterCommits = yield* stats
      assert.isAbove(afterCommits.byWorker, 3, "the worker ran checkpoints during the commits")
      assert.isAbove(afterCommits.byMain, 0, "a WAL past maxWalBytes was finished by the main connection")
      assert.isFalse(afterCommits.failed)

      // Once the commits stop, one more round copies the rest: every frame of the WAL is in the database file.
      const settled = yield* waitUntil(
        stats,
        (s) => s.last !== undefined && s.last.log > 0 && s.last.checkpointed === s.last.log,
        "a complete checkpoint"
      )
      assert.isBelow(settled.last!.log, 60 * 30, "the WAL was started over instead of holding every commit")
      assert.isAbove(Number((yield* fs.stat(filename)).size), startSize + 60 * 100 * 600, "pages reached the file")
      assert.isAbove(largestWal, 0)

      // What was committed is all there for another connection that reads the file alone.
      const counted = yield* Effect.gen(function*() {
        const other = yield* SqliteConnection.SqliteReader
        return yield* other<{ n: number }>`SELECT count(*) AS n FROM jobs`
      }).pipe(Effect.provide(SqliteConnection.layerReader(filename)))
      assert.strictEqual(counted[0]!.n, 6_000)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("run on Effect's Clock: one at start, then one an interval after a commit, none while idle", () =>
    Effect.gen(function*() {
      const { outbox, sleeps, sources, stats } = yield* openStore({ interval: "1 second" })
      yield* waitUntil(stats, (s) => s.byWorker === 1, "the first checkpoint")

      // Idle: a day passes on the clock without a checkpoint (nor a step per interval).
      yield* TestClock.adjust("1 day")
      yield* liveSleep(50)
      assert.strictEqual((yield* stats).byWorker, 1, "no checkpoint without a commit")

      yield* sources.upsertSource({ id: "web", writeKey: "k" }, 1)
      yield* outbox.enqueue("web", entries("a", 10), 2)
      // The change of the WAL file reaches the loop in real time (a watch of the file); it then sleeps on the clock.
      const now = yield* Clock.currentTimeMillis
      yield* waitUntil(sleeps, (pending) => pending.some((at) => at <= now + 1000), "the loop's sleep")
      yield* TestClock.adjust("999 millis")
      yield* liveSleep(50)
      assert.strictEqual((yield* stats).byWorker, 1, "nothing before the interval is over")

      yield* TestClock.adjust("1 milli")
      const second = yield* waitUntil(stats, (s) => s.byWorker === 2, "the second checkpoint")
      assert.isAbove(second.last!.checkpointed, 0, "it copied the commits made in between")
      assert.strictEqual(second.last!.checkpointed, second.last!.log)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a worker that cannot open the file gives the main connection its checkpoint on commit back", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped()
      const stats = yield* WalCheckpoints.make(Path.join(directory, "missing", "store.db"))
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`
      assert.isTrue((yield* stats).failed)
      assert.strictEqual(rows[0]!.wal_autocheckpoint, WalCheckpoints.walCheckpointDefaults.fallbackAutocheckpoint)
    }).pipe(
      Effect.provide(SqliteConnection.layer(":memory:")),
      Effect.provide(NodeFileSystem.layer)
    ))

  it.effect.skipIf(skipUnlessCi("the full-disk checkpoint test", smallDiskUnavailable()))(
    "a checkpoint that fails on a full disk is tried again, and the worker takes over again once it succeeds",
    () =>
      Effect.gen(function*() {
        const disk = yield* Effect.acquireRelease(Effect.sync(() => mountSmallDisk("6m")), (disk) =>
          Effect.sync(() => disk.destroy()))
        const { context, outbox, sleeps, sources, stats } = yield* openStore({ interval: "1 second" }, disk.directory)
        const autocheckpoint = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`).pipe(
            Effect.map((rows) =>
              rows[0]!.wal_autocheckpoint
            ),
            Effect.provide(context)
          )
        yield* waitUntil(stats, (s) =>
          s.byWorker === 1, "the first checkpoint")

        // Commits wait in the WAL (the loop sleeps on the test's clock); then the disk fills up, so copying them
        // into the database file cannot grow it.
        yield* sources.upsertSource({ id: "web", writeKey: "k" }, 1)
        for (let batch = 0; batch < 20; batch++) yield* outbox.enqueue("web", entries(`b${batch}`, 100), 2 + batch)
        disk.fill()
        const now = yield* Clock.currentTimeMillis
        yield* waitUntil(sleeps, (pending) => pending.some((at) => at <= now + 1000), "the sleep")
        yield* TestClock.adjust("1 second")
        const failing = yield* waitUntil(stats, (s) => s.checkpointError !== undefined, "a failed checkpoint")
        assert.match(failing.checkpointError!, /full|space/i)
        assert.isFalse(failing.failed, "the thread lives on")
        assert.strictEqual(yield* autocheckpoint, WalCheckpoints.walCheckpointDefaults.fallbackAutocheckpoint)

        // Still full: the next try (an interval later, backing off) fails too, without any commit to wake it.
        const tried = failing.byWorker
        yield* TestClock.adjust("1 second")
        yield* liveSleep(50)
        assert.isDefined((yield* stats).checkpointError)

        disk.free()
        yield* TestClock.adjust("5 seconds")
        const back = yield* waitUntil(
          stats,
          (s) => s.checkpointError === undefined,
          "a checkpoint after the disk freed"
        )
        assert.isAbove(back.byWorker, tried)
        assert.strictEqual(back.last!.checkpointed, back.last!.log, "every waiting frame was copied")
        assert.strictEqual(yield* autocheckpoint, 0, "the main connection no longer checkpoints on commit")
      }).pipe(Effect.provide(NodeFileSystem.layer))
  )
})
