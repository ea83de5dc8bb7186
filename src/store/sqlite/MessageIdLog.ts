import { Duration, Effect, Layer } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { makeFailureRun } from "../../runtime/FailureRun.js"
import { StoreError } from "../StoreError.js"
import { SqliteHotPaths } from "./SqliteConnection.js"

export interface MessageIdLogOptions {
  /** How long after something is logged the log is looked at, and between looks while it holds rows. */
  readonly interval?: Duration.Input | undefined
  /** Merge once the log holds this many rows… */
  readonly minRows?: number | undefined
  /** …or its oldest row is this old. */
  readonly maxAge?: Duration.Input | undefined
  /** Rows per step: one transaction on the store's connection, between which ingest commits run. */
  readonly step?: number | undefined
  /** At most this many rows per merge: its sorted copy is held in memory while it runs. */
  readonly maxRows?: number | undefined
}

/**
 * A merge pays per page of the indexes it writes, and the larger it is the more entries share a page: larger merges
 * are the cheaper, and far cheaper than writing the index entries at ingest (bench/NOTES.md, "The message id log and
 * the edge rule"). Until merged, the SQLite thread keeps the log's ids in memory, and a merge holds its sorted copy
 * (`maxRows`) in memory while it runs. Each step commits the pages it wrote, and pages near its ends are written again
 * by the next, so smaller steps cost more a row; but an ingest commit queued behind a step waits for it.
 */
export const messageIdLogDefaults = {
  interval: Duration.seconds(1),
  minRows: 50_000,
  maxAge: Duration.seconds(10),
  step: 1_000,
  maxRows: 50_000
} as const

/**
 * Merges the log, `maxRows` rows at a time in steps of `step`, for as long as it holds `minRows` rows or its oldest is
 * older than `maxAgeMs` (everything: `mergeAll`); answers the rows left in it.
 */
export const mergeWhenDue = (
  hot: SqliteHotPaths["Service"],
  due: { readonly minRows: number; readonly maxAgeMs: number; readonly step: number; readonly maxRows: number }
): Effect.Effect<number, SqlError> =>
  Effect.gen(function*() {
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    const request = { limit: due.step, minRows: due.minRows, olderThan: now - due.maxAgeMs, maxRows: due.maxRows }
    for (;;) {
      const progress = yield* hot.merge(request)
      if (progress.done && (progress.merged === 0 || progress.left === 0)) return progress.left
    }
  })

export const mergeAll = (hot: SqliteHotPaths["Service"]) =>
  mergeWhenDue(hot, {
    minRows: 0,
    maxAgeMs: Number.NEGATIVE_INFINITY,
    step: messageIdLogDefaults.step,
    maxRows: messageIdLogDefaults.maxRows
  })

/**
 * Merges SQLite's message id log (migration 9) into the dedupe and look-up indexes: all of it at start (the SQLite thread
 * remembers only what was logged since it started), then in the background whenever it is large or old enough. It
 * sleeps while nothing is logged: an idle store has no timer pending on the Clock.
 */
export const make = (options: MessageIdLogOptions = {}) =>
  Effect.gen(function*() {
    const hot = yield* SqliteHotPaths
    const interval = Duration.fromInputUnsafe(options.interval ?? messageIdLogDefaults.interval)
    const minRows = options.minRows ?? messageIdLogDefaults.minRows
    const maxAgeMs = Duration.toMillis(options.maxAge ?? messageIdLogDefaults.maxAge)
    const step = options.step ?? messageIdLogDefaults.step
    const maxRows = options.maxRows ?? messageIdLogDefaults.maxRows

    yield* mergeAll(hot).pipe(
      Effect.mapError((cause: SqlError) => new StoreError({ operation: "open", cause }))
    )

    const failures = yield* makeFailureRun("the merge of the message id log")
    const afterEachLogging = Effect.gen(function*() {
      yield* hot.awaitLogged
      let left = 1
      while (left > 0) {
        yield* Effect.sleep(interval)
        left = yield* mergeWhenDue(hot, { minRows, maxAgeMs, step, maxRows }).pipe(
          Effect.tap(() => failures.succeeded),
          Effect.catch((error) => Effect.as(failures.failed(error), 1))
        )
      }
    })
    yield* Effect.forkScoped(Effect.forever(afterEachLogging))
    // A process stopped in order leaves the next one nothing to merge before it can start.
    yield* Effect.addFinalizer(() =>
      mergeAll(hot).pipe(
        Effect.catch((error) => Effect.logWarning("the message id log is left for the next start to merge", error))
      )
    )
  })

/** The merges for the life of the layer, over the SQLite connection in context. */
export const layer = (options: MessageIdLogOptions = {}): Layer.Layer<never, StoreError, SqliteHotPaths> =>
  Layer.effectDiscard(make(options))
