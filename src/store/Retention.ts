import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { dedupeWindowMs } from "./Model.js"
import { Purge } from "./Purge.js"
import { retentionConfig } from "./StoreConfig.js"

/**
 * One retention pass at `now`: delivered jobs (and their attempts) finished more than
 * `retention` ago, and message ids seen more than 24 h ago. Dead letters stay until an operator
 * replays or purges them.
 */
export const purgeExpired = (now: number, retention: Duration.Input) =>
  Effect.gen(function*() {
    const purge = yield* Purge
    const delivered = yield* purge.purgeDelivered(now - Duration.toMillis(retention))
    const seen = yield* purge.purgeSeen(now - dedupeWindowMs)
    return { delivered, seen }
  })

export interface RetentionOptions {
  readonly retention: Duration.Input
  /** How often to purge. Default hourly. */
  readonly every?: Duration.Input | undefined
}

/** Background retention: a pass at start, then every `every`. Failures are logged, never fatal. */
export const layerRetention = (options: RetentionOptions): Layer.Layer<never, never, Purge> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const purge = yield* Purge
    const pass = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const purged = yield* purgeExpired(now, options.retention).pipe(Effect.provideService(Purge, purge))
      if (purged.delivered > 0 || purged.seen > 0) {
        yield* Effect.logDebug("retention purge").pipe(Effect.annotateLogs(purged))
      }
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("retention purge failed", cause)))
    yield* pass.pipe(Effect.repeat(Schedule.spaced(options.every ?? Duration.hours(1))), Effect.forkScoped)
  }))

/** `layerRetention` with `HOOKRELAY_RETENTION` (default 7 days). */
export const layerRetentionFromConfig = Layer.unwrap(
  Effect.map(retentionConfig, (retention) => layerRetention({ retention }))
)
