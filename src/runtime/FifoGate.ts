import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

const granted = Effect.succeed(true)

interface Waiter {
  state: "waiting" | "granted" | "cancelled"
  readonly grant: () => void
}

/**
 * A counting semaphore served first in, first out: a released permit is handed straight to the oldest waiter, in the
 * releasing step, so a holder that gives its permit back and takes it again at once goes behind the waiters.
 *
 * Why not Effect's `Semaphore` (first in, first out too since Effect 4): each release with waiters schedules a task
 * that walks a copy of every waiter, O(waiters) per permit when thousands of jobs wait on a slow endpoint
 * (bench/results/runtime-parts.md); it has no synchronous take and give-back for callers that already run in one
 * uninterruptible step (the attempt, the SQLite lock, admission); and its only bounded wait, `Effect.timeout` around
 * `take`, can lose a permit taken as the timeout interrupts it. Used as the dispatcher's endpoint limit, the SQLite
 * connection's lock and ingest admission's commit slots (`takeWithin`).
 */
export class FifoGate {
  private free: number
  private readonly waiters: Array<Waiter> = []
  private head = 0

  constructor(permits: number) {
    this.free = permits
  }

  /** Permits free right now (for metrics and tests). */
  get available(): number {
    return this.free
  }

  /** Attempts queued for a permit (O(queue): for metrics and tests, not the hot path). */
  get waiting(): number {
    let count = 0
    for (let i = this.head; i < this.waiters.length; i++) if (this.waiters[i]!.state === "waiting") count++
    return count
  }

  /** Takes a free permit without waiting: `false` when none is free. Whoever took it must `giveBack` it. */
  tryTake(): boolean {
    if (this.free === 0) return false
    this.free -= 1
    return true
  }

  /** Returns a permit taken with `tryTake`: to the longest waiter, or to the free ones. */
  giveBack(): void {
    this.handOver()
  }

  private handOver(): void {
    while (this.head < this.waiters.length) {
      const waiter = this.waiters[this.head]!
      this.waiters[this.head++] = undefined as never
      if (waiter.state === "waiting") {
        waiter.state = "granted"
        waiter.grant()
        this.compact()
        return
      }
    }
    this.compact()
    this.free += 1
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters.splice(0, this.head)
      this.head = 0
    }
  }

  /**
   * Waits for a permit, first in, first out; whoever took it must `release` it. Interrupted while queued: leaves the
   * queue, holding nothing.
   */
  readonly take: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.free > 0) {
      this.free -= 1
      resume(Effect.void)
      return
    }
    const waiter: Waiter = { state: "waiting", grant: () => resume(Effect.void) }
    this.waiters.push(waiter)
    // Interrupted while queued: leave the queue; interrupted just as the permit arrived: pass it on.
    return Effect.sync(() => {
      if (waiter.state === "granted") this.handOver()
      waiter.state = "cancelled"
    })
  })

  /**
   * Waits at most `wait` for a permit: `true` holding one (give it back with `giveBack` or `release`), `false` holding
   * nothing. Not `Effect.timeout` around `take`: a timeout interrupts the waiting fiber, and a permit handed over just
   * before that interruption would be lost; here the hand-over and the give-up are decided in one synchronous step
   * after the wait, whatever ended it. The wait is interruptible even inside an uninterruptible caller's region.
   */
  readonly takeWithin = (wait: Duration.Input): Effect.Effect<boolean> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (this.tryTake()) return granted
        // Queued in the same synchronous step as the check: a release in between cannot be missed.
        const handed = Deferred.makeUnsafe<void>()
        const waiter: Waiter = { state: "waiting", grant: () => Deferred.doneUnsafe(handed, Exit.void) }
        this.waiters.push(waiter)
        return Effect.flatMap(
          Effect.exit(Effect.interruptible(Effect.timeoutOption(Deferred.await(handed), wait))),
          (waited) => {
            const owned = waiter.state === "granted"
            waiter.state = "cancelled"
            if (Exit.isSuccess(waited)) return Effect.succeed(owned)
            if (owned) this.handOver()
            return restore(Effect.failCause(waited.cause))
          }
        )
      })
    )

  /** Gives back a permit taken with `take`. */
  readonly release: Effect.Effect<void> = Effect.sync(() => this.handOver())

  /**
   * Runs `effect` holding one permit; waiting for it is interruptible. A free permit is taken synchronously, inside
   * the uninterruptible region, so that it cannot be lost between taking it and registering its release; only a
   * caller that must queue pays for the asynchronous wait.
   */
  readonly withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => {
      if (this.free > 0) {
        this.free -= 1
        return Effect.ensuring(restore(effect), this.release)
      }
      return Effect.andThen(restore(this.take), Effect.ensuring(restore(effect), this.release))
    })
}
