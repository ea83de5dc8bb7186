import { Clock, Duration, Effect } from "effect"

export interface PendingSleeps {
  /** The test's clock, recording each sleep on it: provide it to what sleeps. */
  readonly clock: Clock.Clock
  /** When each sleep on `clock` not yet over is due, in Clock milliseconds. */
  readonly sleeps: Effect.Effect<ReadonlyArray<number>>
  /** Runs `effect` (and the fibers it forks) on `clock`. */
  readonly provide: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * The test's clock (its TestClock, unless the test is live), with the sleeps pending on it in view: Effect 4's TestClock
 * keeps them to itself (Effect 3 had `TestClock.sleeps()`), and a test that steps the clock must wait until the loop it
 * drives sleeps again, or its step passes before the sleep begins. Time still moves only with `TestClock.adjust`.
 */
export const pendingSleeps: Effect.Effect<PendingSleeps> = Clock.clockWith((testClock) =>
  Effect.sync(() => {
    const pending: Array<number> = []
    const clock: Clock.Clock = {
      currentTimeMillisUnsafe: () => testClock.currentTimeMillisUnsafe(),
      currentTimeMillis: testClock.currentTimeMillis,
      currentTimeNanosUnsafe: () => testClock.currentTimeNanosUnsafe(),
      currentTimeNanos: testClock.currentTimeNanos,
      monotonicTimeNanosUnsafe: () => testClock.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: testClock.monotonicTimeNanos,
      sleep: (duration) =>
        Effect.suspend(() => {
          const at = testClock.currentTimeMillisUnsafe() + Duration.toMillis(duration)
          pending.push(at)
          return Effect.ensuring(
            testClock.sleep(duration),
            Effect.sync(() => {
              pending.splice(pending.indexOf(at), 1)
            })
          )
        })
    }
    return {
      clock,
      sleeps: Effect.sync(() => pending.slice()),
      provide: (effect) => Effect.provideService(effect, Clock.Clock, clock)
    }
  })
)
