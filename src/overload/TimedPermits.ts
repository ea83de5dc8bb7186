import { Deferred, type Duration, Effect, Exit } from "effect"

const granted = Effect.succeed(true)

/**
 * A counting semaphore whose wait is bounded: `acquire(wait)` answers `true` with a permit, or
 * `false` when no permit came within `wait` (nothing held then). Waiters are served first come,
 * first served; a released permit is handed straight to the oldest waiter.
 *
 * Why not `Effect.makeSemaphore` + `Effect.timeout`: a timeout interrupts the waiting fiber, and a
 * permit taken just before the interruption is lost for good. Here the hand-over and the give-up
 * are both synchronous state changes, decided after the wait whatever ended it, so a permit is
 * never lost nor held by a caller that was told "no".
 */
export interface TimedPermits {
  readonly acquire: (wait: Duration.Input) => Effect.Effect<boolean>
  readonly release: Effect.Effect<void>
  /** Takes a permit if one is free and nobody waits for one, in one synchronous step; `releaseNow` gives it back. */
  readonly tryAcquire: () => boolean
  /** `release`, as a synchronous step (for a finalizer that is already one). */
  readonly releaseNow: () => void
  /** Permits free right now and callers waiting (for tests and metrics). */
  readonly state: Effect.Effect<{ readonly free: number; readonly waiting: number }>
}

export const makeTimedPermits = (permits: number): Effect.Effect<TimedPermits> =>
  Effect.sync(() => {
    let free = permits
    // A Set keeps insertion order: the first value is the oldest waiter.
    const waiters = new Set<Deferred.Deferred<void>>()

    const releaseNow = (): void => {
      const next = waiters.values().next()
      if (next.done === true) {
        free += 1
        return
      }
      waiters.delete(next.value)
      Deferred.doneUnsafe(next.value, Exit.void)
    }
    const release = Effect.sync(releaseNow)

    const tryAcquire = (): boolean => {
      if (free === 0 || waiters.size > 0) return false
      free -= 1
      return true
    }

    const acquire = (wait: Duration.Input): Effect.Effect<boolean> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          // The common case, a free permit and nobody waiting, allocates nothing and runs no generator.
          if (tryAcquire()) return granted
          // Queued in the same synchronous step as the check: a release in between cannot be missed.
          const handed = Deferred.makeUnsafe<void>()
          waiters.add(handed)
          return waitFor(handed, restore, wait)
        })
      )

    const waitFor = (
      handed: Deferred.Deferred<void>,
      restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
      wait: Duration.Input
    ): Effect.Effect<boolean> =>
      Effect.gen(function*() {
        // Interruptible whatever the caller's region is: the bound must hold inside an
        // uninterruptible HTTP handler too (and a caller that goes away while waiting holds nothing).
        const waited = yield* Effect.exit(
          Effect.interruptible(Effect.timeoutOption(Deferred.await(handed), wait))
        )
        // Still queued: nobody handed us a permit, and nobody can any more. Gone: we own one.
        const owned = yield* Effect.sync(() => !waiters.delete(handed))
        if (Exit.isFailure(waited)) {
          if (owned) yield* release
          return yield* restore(Exit.failCause(waited.cause))
        }
        return owned
      })

    return {
      acquire,
      release,
      tryAcquire,
      releaseNow,
      state: Effect.sync(() => ({ free, waiting: waiters.size }))
    }
  })
