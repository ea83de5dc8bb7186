import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"

/**
 * The log of a background task that retries: the first failure of a run of failures is logged at warn, the success
 * that ends the run at info, and the tries in between not at all, so an outage of minutes is two lines, not hundreds.
 */
export interface FailureRun {
  /** Counts a failure; true when it starts a run (and was logged). */
  readonly failed: (error: unknown) => Effect.Effect<boolean>
  /** Counts a success; true when it ends a run (and was logged). */
  readonly succeeded: Effect.Effect<boolean>
}

export const makeFailureRun = (what: string): Effect.Effect<FailureRun> =>
  Effect.map(Ref.make(0), (failures) => ({
    failed: (error) =>
      Effect.flatMap(Ref.getAndUpdate(failures, (n) => n + 1), (before) =>
        before === 0
          ? Effect.as(Effect.logWarning(`${what} failed; trying again until it succeeds`, error), true)
          : Effect.succeed(false)),
    succeeded: Effect.flatMap(Ref.getAndSet(failures, 0), (before) =>
      before > 0
        ? Effect.as(Effect.logInfo(`${what} succeeded again after ${before} failed tries`), true)
        : Effect.succeed(false))
  }))
