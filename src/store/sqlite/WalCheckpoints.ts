import { Data, Deferred, Duration, Effect, Exit, Layer, Ref, Result, Schedule, type Scope } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { type FSWatcher, watch } from "node:fs"
import { makeFailureRun } from "../../runtime/FailureRun.js"
import * as CheckpointWorker from "./CheckpointWorker.js"

class WalWatchError extends Data.TaggedError("WalWatchError")<{ readonly cause: unknown }> {}

/**
 * Watches of `file`, one at a time: `arm` starts watching now and returns an effect that completes at
 * the file's first change since (at once if it changed already); that watch then ends. The watch in
 * place when the scope closes is closed with it.
 */
const walChanges = (
  file: string
): Effect.Effect<Effect.Effect<Effect.Effect<void>, WalWatchError>, never, Scope.Scope> =>
  Effect.gen(function*() {
    let current: FSWatcher | undefined
    yield* Effect.addFinalizer(() => Effect.sync(() => current?.close()))
    return Effect.gen(function*() {
      const changed = yield* Deferred.make<void>()
      current?.close()
      current = yield* Effect.try({
        try: () => {
          const watcher = watch(file, { persistent: false }, () => {
            watcher.close()
            Deferred.doneUnsafe(changed, Exit.void)
          })
          // A watch that breaks (the file removed) wakes the loop, whose next checkpoint then tells what is wrong.
          watcher.on("error", () => Deferred.doneUnsafe(changed, Exit.void))
          return watcher
        },
        catch: (cause) => new WalWatchError({ cause })
      })
      return Deferred.await(changed)
    })
  })

export interface WalCheckpointOptions {
  /**
   * How long after the first commit since the last checkpoint the worker checkpoints. Default 200 ms: the
   * commits of that time are copied in one pass, and a small WAL is cheap to copy.
   */
  readonly interval?: Duration.Input | undefined
  /**
   * When the WAL holds more than this many bytes not yet copied, the main connection finishes the
   * checkpoint itself (default 64 MB). See `make`.
   */
  readonly maxWalBytes?: number | undefined
}

export const walCheckpointDefaults = {
  interval: Duration.millis(200),
  maxWalBytes: 64 * 1024 * 1024,
  /** What the main connection goes back to if the worker fails: the setting it had before the worker existed. */
  fallbackAutocheckpoint: 10_000,
  /** The longest wait between two tries while checkpoints fail (a full disk): they back off from `interval` to it. */
  maxRetryDelay: Duration.seconds(5)
} as const

export interface WalCheckpointStats {
  /** Checkpoints run by the worker thread. */
  readonly byWorker: number
  /** Checkpoints the main connection had to finish because the WAL grew past `maxWalBytes`. */
  readonly byMain: number
  /** The last answer of the worker's checkpoint. */
  readonly last: CheckpointWorker.CheckpointResult | undefined
  /** The worker failed; SQLite's own checkpoint on commit is back on. */
  readonly failed: boolean
  /**
   * Why the last checkpoint failed while the worker lives on (a full disk), or undefined when it succeeded. Until one
   * succeeds, SQLite's checkpoint on commit is back on and the worker tries again, backing off.
   */
  readonly checkpointError: string | undefined
}

/**
 * Takes WAL checkpoints off the commit path of a SQLite file database. By default SQLite
 * checkpoints inside the commit that pushes the WAL past `wal_autocheckpoint` pages: that commit
 * copies the WAL into the database and fsyncs twice, on the event loop, stalling the ingest requests
 * behind it. Here the main connection never checkpoints on commit (`wal_autocheckpoint = 0`)
 * and a worker thread with its own connection runs a PASSIVE checkpoint every `interval`: it copies
 * committed frames while the main connection keeps writing, and never takes a lock anyone waits for.
 *
 * A PASSIVE checkpoint cannot copy frames committed while it runs, and SQLite only starts the WAL
 * over from its beginning when a checkpoint has copied everything before the next write. Under
 * commits without a pause the WAL would then grow without bound; so when the worker reports more
 * than `maxWalBytes` in the WAL and not all of it copied, the main connection runs one PASSIVE
 * checkpoint itself between two transactions. Nothing writes during it, so it copies the rest (only
 * the frames since the worker's pass) and the next commit starts the WAL over
 * (`journal_size_limit` then truncates the file).
 *
 * If the worker cannot start or its thread stops, the main connection gets its checkpoint on commit back for good. A
 * checkpoint that fails while the thread lives on (a full disk) gives it back only until a checkpoint succeeds again:
 * the worker keeps trying, backing off to `maxRetryDelay`, whether or not anything commits meanwhile.
 */
export const make = (
  filename: string,
  options: WalCheckpointOptions = {}
): Effect.Effect<Effect.Effect<WalCheckpointStats>, never, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const interval = Duration.fromInputUnsafe(options.interval ?? walCheckpointDefaults.interval)
    const maxWalBytes = options.maxWalBytes ?? walCheckpointDefaults.maxWalBytes
    const stats = yield* Ref.make<WalCheckpointStats>({
      byWorker: 0,
      byMain: 0,
      last: undefined,
      failed: false,
      checkpointError: undefined
    })

    const fallBack = (cause: unknown) =>
      Effect.gen(function*() {
        yield* Effect.logWarning("WAL checkpoints are back on the commit path: the checkpoint thread failed", cause)
        yield* Ref.update(stats, (s) => ({ ...s, failed: true }))
        yield* sql.unsafe(`PRAGMA wal_autocheckpoint = ${walCheckpointDefaults.fallbackAutocheckpoint}`).pipe(
          Effect.catchCause((cause) => Effect.logError("could not restore wal_autocheckpoint", cause))
        )
      })

    const started = yield* CheckpointWorker.start(filename).pipe(Effect.result)
    if (Result.isFailure(started)) {
      yield* fallBack(started.failure.cause)
      return Ref.get(stats)
    }
    const worker = started.success
    const pageSize = yield* sql<{ page_size: number }>`PRAGMA page_size`.pipe(
      Effect.map((rows) => Number(rows[0]?.page_size ?? 4096)),
      Effect.orElseSucceed(() => 4096)
    )
    const maxFrames = Math.max(1, Math.floor(maxWalBytes / pageSize))
    const off = yield* sql`PRAGMA wal_autocheckpoint = 0`.pipe(Effect.result)
    if (Result.isFailure(off)) {
      yield* Effect.logWarning("could not turn SQLite's checkpoint on commit off", off.failure)
      return Ref.get(stats)
    }

    const checkpointOnCommit = (on: boolean) =>
      sql.unsafe(`PRAGMA wal_autocheckpoint = ${on ? walCheckpointDefaults.fallbackAutocheckpoint : 0}`).pipe(
        Effect.catchCause((cause) => Effect.logError("could not set wal_autocheckpoint", cause))
      )

    // The commit path checkpoints from the first failure of a run until the success that ends it.
    const failures = yield* makeFailureRun("a WAL checkpoint on its thread")
    const failing = (message: string) =>
      Effect.andThen(
        Ref.update(stats, (s) => ({ ...s, checkpointError: message })),
        Effect.flatMap(failures.failed(message), (first) => first ? checkpointOnCommit(true) : Effect.void)
      )
    const recovered = Effect.andThen(
      Ref.update(stats, (s) => ({ ...s, checkpointError: undefined })),
      Effect.flatMap(failures.succeeded, (ended) => ended ? checkpointOnCommit(false) : Effect.void)
    )

    const pass = Effect.gen(function*() {
      const result = yield* worker.checkpoint
      yield* Ref.update(stats, (s) => ({ ...s, byWorker: s.byWorker + 1, last: result }))
      if (result.log > maxFrames) {
        yield* sql`PRAGMA wal_checkpoint(PASSIVE)`
        yield* Ref.update(stats, (s) => ({ ...s, byMain: s.byMain + 1 }))
      }
    })

    const retryDelays = Schedule.min([
      Schedule.exponential(interval),
      Schedule.spaced(walCheckpointDefaults.maxRetryDelay)
    ])
    // Only a stopped thread ends the loop; a failed checkpoint (SQLITE_FULL, an I/O error) is tried again.
    const tick = pass.pipe(
      Effect.tapError((error) => error._tag === "CheckpointWorkerError" ? Effect.void : failing(error.message)),
      Effect.retry({ schedule: retryDelays, while: (error) => error._tag !== "CheckpointWorkerError" }),
      Effect.andThen(recovered)
    )

    // Only commits write the WAL file, so the loop waits for the file to change instead of waking every
    // `interval` for nothing: an idle store costs no checkpoint, and no sleep is pending on the Clock (under
    // TestClock an adjustment of a day would otherwise step through every interval, a worker round trip each).
    // The watch is armed before the checkpoint is posted, so a commit landing during it starts the next round.
    // Where the file cannot be watched, the loop runs every `interval`. One checkpoint at start: what an earlier
    // process left in the WAL.
    const walFile = `${filename}-wal`
    const rounds = Effect.gen(function*() {
      const arm = yield* walChanges(walFile)
      let next = yield* arm
      yield* tick
      for (;;) {
        yield* next
        yield* Effect.sleep(interval)
        next = yield* arm
        yield* tick
      }
    }).pipe(
      Effect.scoped,
      Effect.catchTag("WalWatchError", (error) =>
        Effect.andThen(
          Effect.logWarning("the WAL file cannot be watched: checkpoints every interval instead", error.cause),
          Effect.repeat(tick, Schedule.spaced(interval))
        ))
    )

    yield* rounds.pipe(
      Effect.catch((error) => fallBack(error)),
      Effect.forkScoped
    )
    return Ref.get(stats)
  })

/** Whether a filename names a file SQLite can share with a second connection (not `:memory:`, not a URI). */
export const isSharedFile = (filename: string): boolean =>
  filename !== "" && filename !== ":memory:" && !filename.startsWith("file:")

/** The checkpoints of `filename` for the life of the layer, over the main connection in context. */
export const layer = (
  filename: string,
  options: WalCheckpointOptions = {}
): Layer.Layer<never, never, SqlClient.SqlClient> => Layer.effectDiscard(make(filename, options))
