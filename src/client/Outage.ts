import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Random from "effect/Random"
import type { SendError } from "./ClientErrors.js"
import { initialBackoff, maxBackoff } from "./ClientRetry.js"

/**
 * How a batch may go out: `send` while the server is reachable (at the usual `maxInFlight`);
 * `probe` during an outage, as the one request that tests whether the server is back; `closed`
 * once `close` has timed out: the batch is reported without being sent.
 */
export type Turn = "send" | "probe" | "closed"

/**
 * The client's view of the server, shared by its senders: an outage is the client's, not each
 * batch's. The first retryable failure starts one; from then on the batches wait and the oldest
 * waiting one is sent as a probe, one at a time, after a jittered delay that doubles from
 * `initialBackoff` to `maxBackoff` (a `Retry-After` replaces it). The first answer ends the outage.
 */
export interface Outage {
  /** Waits until batch number `seq` may go out, and says how. */
  readonly turn: (seq: number) => Effect.Effect<Turn>
  /** The server answered (2xx, or a final status): an outage ends, and the batches waiting go out. */
  readonly answered: Effect.Effect<void>
  /** An attempt made on `turn` failed with a retryable error: an outage starts, or its probe delay grows. */
  readonly failed: (turn: Turn, error: SendError, retryAfterMillis: number | undefined) => Effect.Effect<void>
  /** A batch given `turn` leaves without a result (its messages expired, or a final transport error). */
  readonly leave: (turn: Turn) => void
  /** The last retryable error of the current outage, if one is going on. */
  readonly error: () => SendError | undefined
  /** From now on every turn is `closed`: waiting batches are woken to be reported. */
  readonly close: () => void
}

/** What the outage reports as it starts and ends (status, log). */
export interface OutageEvents {
  readonly started: (error: SendError, since: number) => Effect.Effect<void>
  readonly ended: (downtimeMillis: number) => Effect.Effect<void>
}

interface Waiter {
  readonly seq: number
  readonly turn: Deferred.Deferred<Turn>
}

interface Down {
  readonly since: number
  error: SendError
  /** The backoff before jitter; the next probe waits about this long. */
  backoffMillis: number
  /** When the next probe may start (epoch ms). */
  probeAt: number
  /** A batch holds the probe turn (waiting for its time, or in flight). */
  probing: boolean
  /** Completes when the outage ends. */
  readonly over: Deferred.Deferred<void>
}

const initialMillis = Duration.toMillis(initialBackoff)
const maxMillis = Duration.toMillis(maxBackoff)

// ±20 % jitter, from Effect's Random (so that tests can fix it), and never past `maxBackoff`: a server back
// from a restart is probed within it.
const jittered = (millis: number): Effect.Effect<number> =>
  Effect.map(Random.next, (random) => Math.min(Math.round(millis * (0.8 + 0.4 * random)), maxMillis))

export const makeOutage = (events: OutageEvents): Effect.Effect<Outage> =>
  Effect.map(Clock.clockWith(Effect.succeed), (clock) => {
    let down: Down | undefined
    let closed = false
    // Sorted by `seq`: the oldest batch is the probe.
    const waiters: Array<Waiter> = []

    const wake = (waiter: Waiter, turn: Turn) => Deferred.doneUnsafe(waiter.turn, Exit.succeed(turn))

    const electProbe = () => {
      if (down === undefined || down.probing || waiters.length === 0) return
      down.probing = true
      wake(waiters.shift()!, "probe")
    }

    // The probe waits for its time, unless the outage ends first (then it is an ordinary send).
    const probeWhenDue = (state: Down): Effect.Effect<Turn> => {
      const wait = Math.max(0, state.probeAt - clock.currentTimeMillisUnsafe())
      return Effect.raceFirst(
        Effect.as(Effect.sleep(Duration.millis(wait)), "probe" as const),
        Effect.as(Deferred.await(state.over), "send" as const)
      ).pipe(
        Effect.map((turn) => closed ? "closed" : turn),
        Effect.onInterrupt(() => Effect.sync(() => leave("probe")))
      )
    }

    const turn = (seq: number): Effect.Effect<Turn> =>
      Effect.suspend(() => {
        if (closed) return Effect.succeed("closed")
        if (down === undefined) return Effect.succeed("send")
        const state = down
        const waiter: Waiter = { seq, turn: Deferred.makeUnsafe<Turn>() }
        let at = waiters.length
        while (at > 0 && waiters[at - 1]!.seq > seq) at--
        waiters.splice(at, 0, waiter)
        electProbe()
        return Deferred.await(waiter.turn).pipe(
          Effect.flatMap((given) => given === "probe" ? probeWhenDue(state) : Effect.succeed(given)),
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              const index = waiters.indexOf(waiter)
              if (index >= 0) waiters.splice(index, 1)
            })
          )
        )
      })

    const answered: Effect.Effect<void> = Effect.suspend(() => {
      const state = down
      if (state === undefined) return Effect.void
      down = undefined
      Deferred.doneUnsafe(state.over, Exit.void)
      for (const waiter of waiters.splice(0)) wake(waiter, closed ? "closed" : "send")
      return events.ended(clock.currentTimeMillisUnsafe() - state.since)
    })

    const failed = (given: Turn, error: SendError, retryAfterMillis: number | undefined): Effect.Effect<void> =>
      Effect.gen(function*() {
        const now = clock.currentTimeMillisUnsafe()
        if (down === undefined) {
          const delay = retryAfterMillis ?? (yield* jittered(initialMillis))
          down = {
            since: now,
            error,
            backoffMillis: initialMillis,
            probeAt: now + delay,
            probing: false,
            over: Deferred.makeUnsafe<void>()
          }
          yield* events.started(error, now)
          return
        }
        down.error = error
        if (given !== "probe") return
        down.backoffMillis = Math.min(down.backoffMillis * 2, maxMillis)
        down.probeAt = now + (retryAfterMillis ?? (yield* jittered(down.backoffMillis)))
        down.probing = false
        // The failed probe's batch asks for a turn again; it is elected then, with every batch waiting.
      })

    const leave = (given: Turn) => {
      if (given !== "probe" || down === undefined) return
      down.probing = false
      electProbe()
    }

    const close = () => {
      closed = true
      for (const waiter of waiters.splice(0)) wake(waiter, "closed")
      if (down !== undefined) Deferred.doneUnsafe(down.over, Exit.void)
    }

    return { turn, answered, failed, leave, error: () => down?.error, close }
  })
