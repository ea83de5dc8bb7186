import { Effect } from "effect"

interface Waiter {
  state: "waiting" | "granted" | "cancelled"
  readonly grant: () => void
}

/**
 * The concurrency limit of one endpoint actor: at most `permits` attempts in flight, the rest
 * queued first in, first out. Effect's `Semaphore` wakes every waiter on each release, which costs
 * O(waiters) per request when thousands of jobs wait on a slow endpoint; this gate hands a
 * released permit straight to the next waiter.
 */
export class EndpointGate {
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
    this.release()
  }

  private release(): void {
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

  private readonly acquire: Effect.Effect<void> = Effect.async<void>((resume) => {
    if (this.free > 0) {
      this.free -= 1
      resume(Effect.void)
      return
    }
    const waiter: Waiter = { state: "waiting", grant: () => resume(Effect.void) }
    this.waiters.push(waiter)
    // Interrupted while queued: leave the queue; interrupted just as the permit arrived: pass it on.
    return Effect.sync(() => {
      if (waiter.state === "granted") this.release()
      waiter.state = "cancelled"
    })
  })

  private readonly released: Effect.Effect<void> = Effect.sync(() => this.release())

  /**
   * Runs `effect` holding one permit; waiting for it is interruptible. A free permit is taken synchronously, inside
   * the uninterruptible region, so that it cannot be lost between taking it and registering its release; only a
   * caller that must queue pays for the asynchronous wait.
   */
  readonly withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => {
      if (this.free > 0) {
        this.free -= 1
        return Effect.ensuring(restore(effect), this.released)
      }
      return Effect.zipRight(restore(this.acquire), Effect.ensuring(restore(effect), this.released))
    })
}
