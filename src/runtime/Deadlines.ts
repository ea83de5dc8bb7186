import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Latch from "effect/Latch"
import type * as Scope from "effect/Scope"
import { Slots } from "./Slots.js"

/** Something with a deadline (a time on the Clock, in ms): `expire` is called once it has passed. */
export interface Expiring {
  readonly deadline: number
  expire(): void
}

/**
 * The requests in flight with their deadlines, kept by one ticker fiber for the owner's life (the delivery transport,
 * the client's transport). `Effect.timeout` forks two fibers and a timer per request to race it against a sleep; here a
 * request costs a slot, taken when it starts and emptied when it ends. The ticker sleeps on the Clock (so `TestClock`
 * drives it) until the earliest deadline, never less than `resolution` (a burst of expiries costs one wake-up), or until an
 * entry due sooner arrives, and parks on a latch while nothing is in flight.
 */
export interface Deadlines {
  /** Registers `entry` until its deadline; returns the slot that `remove` takes. */
  readonly add: (entry: Expiring) => number
  /** Ends `entry`'s wait (it finished first); nothing if it has expired already. */
  readonly remove: (slot: number, entry: Expiring) => void
  readonly size: () => number
}

export const make = (options: { readonly resolution?: Duration.Input | undefined } = {}): Effect.Effect<
  Deadlines,
  never,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const resolutionMillis = Duration.toMillis(Duration.fromInputUnsafe(options.resolution ?? 0))
    const waiting = new Slots<Expiring>()
    const wake = yield* Latch.make(false)
    // When the ticker wakes next (Infinity while parked): an entry due before that wakes it early.
    let nextWake = Infinity

    const tick: Effect.Effect<void> = Effect.suspend(() => {
      // Closed here and awaited below in one synchronous step: an entry added in between opens it again.
      wake.closeUnsafe()
      if (waiting.size === 0) {
        nextWake = Infinity
        return wake.await
      }
      const now = clock.currentTimeMillisUnsafe()
      let next = Infinity
      waiting.forEach((entry, slot) => {
        if (entry.deadline > now) {
          if (entry.deadline < next) next = entry.deadline
          return
        }
        // Taken before it is told, so that its own `remove` (and whatever reuses the slot) is left alone.
        waiting.take(slot)
        entry.expire()
      })
      if (next === Infinity) return Effect.void
      const sleepMillis = Math.max(next - now, resolutionMillis)
      nextWake = now + sleepMillis
      return Effect.raceFirst(clock.sleep(Duration.millis(sleepMillis)), wake.await)
    })
    yield* Effect.forkScoped(Effect.forever(tick))

    const add = (entry: Expiring): number => {
      const slot = waiting.add(entry)
      if (entry.deadline < nextWake) {
        nextWake = entry.deadline
        wake.openUnsafe()
      }
      return slot
    }
    const remove = (slot: number, entry: Expiring): void => {
      if (waiting.get(slot) === entry) waiting.take(slot)
    }
    return { add, remove, size: () => waiting.size }
  })
