import { Effect } from "effect"
import type { Clock } from "effect"
import type { ReservedStarts } from "../store/EndpointShare.js"
import type { StoreError } from "../store/StoreError.js"
import type { Pass } from "./EndpointGuard.js"

// Start instants asked for at once: at most this share of a second of the limit, so that a process does not hold
// instants the others could use.
const batchSeconds = 0.05
// An instant this far past is given up, not used late: late starts bunched together would crowd a second. Every
// instant used late adds to the busiest second, so this stays a small share of it.
const staleMillis = 20
// After a failed reservation (the store unreachable), the waiting attempts try again after this.
const retryMillis = 500
// The store's clock is placed on this one by the quickest recent answer; an older estimate gives way to any answer.
const offsetMaxAgeMillis = 30_000

/**
 * The store's clock less this process's, from the reservations' answers: each answer came while the store's clock
 * read `now`, somewhere between the question and the answer, so the middle is off by at most half the round trip. The
 * quickest round trip of the last seconds bounds it best: a slow answer (a busy event loop, a lock waited for) is not
 * allowed to move the instants.
 */
export class StoreClock {
  private offset = 0
  private roundTrip = Infinity
  private measuredAt = -Infinity

  local(reserved: ReservedStarts, sentAt: number, receivedAt: number): number {
    const roundTrip = receivedAt - sentAt
    if (roundTrip <= this.roundTrip || receivedAt - this.measuredAt > offsetMaxAgeMillis) {
      this.offset = reserved.now - (sentAt + receivedAt) / 2
      this.roundTrip = roundTrip
      this.measuredAt = receivedAt
    }
    return reserved.first - this.offset
  }
}

/**
 * An endpoint's rate limit for the deployment: start instants reserved in batches from the limit every process
 * shares (`EndpointShare.reserveStarts`), each used once, at or after its time. The processes' instants never
 * overlap, so a second of the deployment holds at most the limit's attempts, however many processes deliver.
 */
export class SharedStarts {
  private instants: Array<number> = []
  /** Waiters for the reservation in flight; undefined when none is. */
  private fetching: Array<() => void> | undefined
  private waiting = 0
  /** Instants asked for at once: doubled while every one is used, halved when some go unused (up to a batch). */
  private size = 1
  /** Instants given up since the last reservation. */
  private unused = 0
  private readonly storeClock = new StoreClock()
  interval = 0

  constructor(
    private readonly clock: Clock.Clock,
    private readonly reserve: (intervalMillis: number, count: number) => Effect.Effect<ReservedStarts, StoreError>
  ) {}

  private dropStale(now: number): void {
    let stale = 0
    while (stale < this.instants.length && this.instants[stale]! < now - staleMillis) stale++
    if (stale === 0) return
    this.instants.splice(0, stale)
    this.unused += stale
  }

  /** An instant due now, taken; false when none is (the caller waits in `next`). */
  tryTake(): boolean {
    const now = this.clock.currentTimeMillisUnsafe()
    this.dropStale(now)
    if (this.instants.length === 0 || this.instants[0]! > now) return false
    this.instants.shift()
    return true
  }

  /** Waits for this attempt's instant, or answers `unavailable` when it would come after `lastStart`. */
  next(lastStart: number): Effect.Effect<Pass> {
    // Counted in `waiting` while it has no instant: a reservation is sized by the attempts still without one.
    let counted = false
    const count = (on: boolean): void => {
      if (on !== counted) this.waiting += on ? 1 : -1
      counted = on
    }
    const step = (): Effect.Effect<Pass> => {
      const now = this.clock.currentTimeMillisUnsafe()
      this.dropStale(now)
      const at = this.instants[0]
      if (at === undefined) {
        count(true)
        return Effect.andThen(this.fetching === undefined ? this.fetch() : this.awaitFetch(), Effect.suspend(step))
      }
      count(false)
      if (at > lastStart) return Effect.succeed("unavailable")
      this.instants.shift()
      if (at <= now) return Effect.succeed("go")
      // Woken too late (a busy event loop): the instant is lost, not used late.
      return Effect.andThen(
        Effect.sleep(at - now),
        Effect.suspend(() => {
          if (this.clock.currentTimeMillisUnsafe() - at <= staleMillis) return Effect.succeed<Pass>("go")
          this.unused += 1
          return step()
        })
      )
    }
    return Effect.ensuring(Effect.suspend(step), Effect.sync(() => count(false)))
  }

  private awaitFetch(): Effect.Effect<void> {
    return Effect.callback<void>((resume) => {
      const waiter = () => resume(Effect.void)
      this.fetching!.push(waiter)
      return Effect.sync(() => {
        const index = this.fetching?.indexOf(waiter) ?? -1
        if (index >= 0) this.fetching!.splice(index, 1)
      })
    })
  }

  /** One reservation for the attempts waiting now (at most a batch); they all look again after it. */
  private fetch(): Effect.Effect<void> {
    const waiters: Array<() => void> = []
    this.fetching = waiters
    const interval = this.interval
    const batch = Math.max(1, Math.floor(batchSeconds * 1000 / interval))
    this.size = this.unused === 0 ? Math.min(this.size * 2, batch) : Math.max(1, Math.floor(this.size / 2))
    this.unused = 0
    const count = Math.min(Math.max(this.size, this.waiting), batch)
    const sentAt = this.clock.currentTimeMillisUnsafe()
    return this.reserve(interval, count).pipe(
      Effect.matchEffect({
        onSuccess: (reserved) =>
          Effect.sync(() => {
            const first = this.storeClock.local(reserved, sentAt, this.clock.currentTimeMillisUnsafe())
            for (let i = 0; i < count; i++) this.instants.push(first + i * interval)
          }),
        onFailure: () => Effect.sleep(retryMillis)
      }),
      Effect.ensuring(Effect.sync(() => {
        this.fetching = undefined
        for (const waiter of waiters) waiter()
      }))
    )
  }

  /** The limit changed or went: the instants reserved at the old spacing are given up. */
  reset(interval: number): void {
    if (interval !== this.interval) this.instants = []
    this.interval = interval
  }
}
