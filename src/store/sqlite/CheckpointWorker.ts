import { Data, Deferred, Duration, Effect, Exit, Option, type Scope, Semaphore } from "effect"
import { Worker } from "node:worker_threads"
import { loadDriver } from "./SqliteDriver.js"

/** What `PRAGMA wal_checkpoint` answered: `log` frames in the WAL, `checkpointed` of them copied back. */
export interface CheckpointResult {
  readonly busy: boolean
  readonly log: number
  readonly checkpointed: number
}

/** The checkpoint thread cannot run: it did not start, or it stopped. */
export class CheckpointWorkerError extends Data.TaggedError("CheckpointWorkerError")<{ readonly cause: unknown }> {}

/** One checkpoint answered an error (a full disk, an I/O error) while its thread lives on: the next may succeed. */
export class CheckpointFailed extends Data.TaggedError("CheckpointFailed")<{ readonly message: string }> {}

export interface CheckpointWorker {
  /** One PASSIVE checkpoint on the worker's own connection: copies what it can, never waits for a lock. */
  readonly checkpoint: Effect.Effect<CheckpointResult, CheckpointWorkerError | CheckpointFailed>
}

/**
 * The worker's program, plain CommonJS evaluated by `new Worker(..., { eval: true })`: no file to
 * ship next to the compiled output and nothing for tsx or vitest to transform. It opens its own
 * better-sqlite3 connection to the database file and runs a checkpoint per message, so the copy of
 * WAL frames back into the database and its two fsyncs run on another thread while the main
 * connection keeps committing. `synchronous = NORMAL` as on the main connection: the checkpoint
 * fsyncs the WAL before it copies and the database after, which is what makes a reset WAL safe.
 */
const workerSource = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.driver)
const db = new Database(workerData.filename, { fileMustExist: true })
db.pragma("synchronous = NORMAL")
db.pragma("busy_timeout = 0")
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close()
    parentPort.close()
    return
  }
  try {
    const row = db.pragma("wal_checkpoint(PASSIVE)")[0]
    parentPort.postMessage({ ok: true, busy: row.busy !== 0, log: row.log, checkpointed: row.checkpointed })
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String(error && error.message || error) })
  }
})
parentPort.postMessage({ ready: true })
`

type Reply =
  | { readonly ready: true }
  | { readonly ok: true; readonly busy: boolean; readonly log: number; readonly checkpointed: number }
  | { readonly ok: false; readonly error: string }

/** How long closing waits for a checkpoint in progress before the thread is terminated. */
const closeWait = Duration.seconds(5)

/**
 * Starts the checkpoint thread for the SQLite file `filename` (which must exist, in WAL mode) and
 * stops it with the scope: the connection is closed after the checkpoint in progress, if any.
 * One checkpoint at a time: callers are serialized by a semaphore, replies come back in order.
 */
export const start = (filename: string): Effect.Effect<CheckpointWorker, CheckpointWorkerError, Scope.Scope> =>
  Effect.gen(function*() {
    const driver = yield* Effect.try({
      try: () => loadDriver().path,
      catch: (cause) => new CheckpointWorkerError({ cause })
    })
    const ready = yield* Deferred.make<void, CheckpointWorkerError>()
    const exited = yield* Deferred.make<void>()
    let waiting: Option.Option<Deferred.Deferred<CheckpointResult, CheckpointWorkerError | CheckpointFailed>> = Option
      .none()
    let failure: Option.Option<CheckpointWorkerError> = Option.none()

    const fail = (error: CheckpointWorkerError) => {
      failure = Option.some(error)
      Deferred.doneUnsafe(ready, Exit.fail(error))
      if (Option.isSome(waiting)) Deferred.doneUnsafe(waiting.value, Exit.fail(error))
      waiting = Option.none()
    }

    const worker = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const worker = new Worker(workerSource, { eval: true, workerData: { driver, filename } })
          worker.on("message", (reply: Reply) => {
            if ("ready" in reply) return Deferred.doneUnsafe(ready, Exit.void)
            const current = waiting
            waiting = Option.none()
            if (Option.isNone(current)) return
            Deferred.doneUnsafe(
              current.value,
              reply.ok
                ? Exit.succeed({ busy: reply.busy, log: reply.log, checkpointed: reply.checkpointed })
                : Exit.fail(new CheckpointFailed({ message: reply.error }))
            )
          })
          worker.on("error", (cause) => fail(new CheckpointWorkerError({ cause })))
          worker.on("exit", (code) => {
            fail(new CheckpointWorkerError({ cause: `the checkpoint thread exited (${code})` }))
            Deferred.doneUnsafe(exited, Exit.void)
          })
          return worker
        },
        catch: (cause) => new CheckpointWorkerError({ cause })
      }),
      (worker) =>
        Effect.gen(function*() {
          worker.postMessage("close")
          const closed = yield* Deferred.await(exited).pipe(Effect.timeoutOption(closeWait))
          if (Option.isNone(closed)) yield* Effect.promise(() => worker.terminate())
        })
    )
    yield* Deferred.await(ready)

    const lock = yield* Semaphore.make(1)
    const checkpoint = lock.withPermits(1)(
      Effect.suspend(() => {
        if (Option.isSome(failure)) return Effect.fail(failure.value)
        return Effect.flatMap(Deferred.make<CheckpointResult, CheckpointWorkerError | CheckpointFailed>(), (reply) => {
          waiting = Option.some(reply)
          worker.postMessage("checkpoint")
          // Uninterruptible wait: the reply must be taken off `waiting` before the next checkpoint posts.
          return Effect.uninterruptible(Deferred.await(reply))
        })
      })
    )
    return { checkpoint }
  })
