import * as Effect from "effect/Effect"

interface Waiter {
  state: "waiting" | "granted" | "cancelled"
  readonly grant: () => void
}

/**
 * A counting semaphore served first in, first out: a released permit is handed straight to the oldest waiter.
 *
 * Effect's `Semaphore` wakes its waiters in a task scheduled after the release, so a fiber that releases and takes
 * again in one go (a loop of transactions) takes the permit back before any waiter runs: on the SQLite connection's
 * lock, an ingest commit waited 1.5 s behind a retention purge's chunks (`bench/support/retentionStall.ts`). It also
 * walks every waiter on each release, O(waiters) per request when thousands of jobs wait on a slow endpoint. Used as
 * the dispatcher's endpoint limit and as the SQLite connection's lock.
 */
export class FifoGate {
  private free: number
  private readonly waiters: Array<Waiter> = []
  private head = 0

  constructor(permits: number) {
    this.free = permits
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
