import { Duration, Effect, Layer, Metric, Schedule } from "effect"
import { makeFailureRun } from "../runtime/FailureRun.js"
import { Outbox } from "../store/Outbox.js"
import { backlogWithStatus } from "./Metrics.js"

export interface BacklogGaugeOptions {
  /** How often the store is counted. Default 5 s. */
  readonly every?: Duration.Input | undefined
}

/** One count of the outbox into the `hookrelay_backlog_jobs` gauge, by status. */
export const updateBacklog = Effect.gen(function*() {
  const outbox = yield* Outbox
  // Not the delivered jobs: the gauge does not show them, and counting every one retention keeps, every period, would
  // hold the store (SQLite's one writing connection) for longer the longer the server runs.
  const backlog = yield* outbox.backlog({ delivered: false })
  yield* Metric.update(backlogWithStatus("pending"), backlog.pending)
  yield* Metric.update(backlogWithStatus("delivering"), backlog.delivering)
  yield* Metric.update(backlogWithStatus("dead"), backlog.dead)
})

/**
 * Keeps the backlog gauge current: a count at start, then every `every` on Effect's Clock. The
 * count is one query per period, whatever the traffic; the next period tries again after a failure,
 * logged once per run of failures.
 */
export const layer = (options: BacklogGaugeOptions = {}): Layer.Layer<never, never, Outbox> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const outbox = yield* Outbox
    const failures = yield* makeFailureRun("the backlog count")
    const pass = updateBacklog.pipe(
      Effect.provideService(Outbox, outbox),
      Effect.andThen(failures.succeeded),
      Effect.catchCause((cause) => failures.failed(cause))
    )
    yield* pass.pipe(Effect.repeat(Schedule.spaced(options.every ?? Duration.seconds(5))), Effect.forkScoped)
  }))
