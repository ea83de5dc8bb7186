import { Context, Effect, Latch, Layer } from "effect"
import type { Duration } from "effect"

export interface OutboxSignalShape {
  /** Something was committed to the outbox: wake the dispatcher now instead of at its next poll. */
  readonly notify: Effect.Effect<void>
  /** `notify` from synchronous code (a callback outside any fiber). */
  readonly unsafeNotify: () => void
  /** Forgets earlier rings: call before looking for work, then `wait` if none was found. */
  readonly reset: Effect.Effect<void>
  /** Waits for a `notify` since the last `reset`, at most `timeout`. */
  readonly wait: (timeout: Duration.Input) => Effect.Effect<void>
}

/**
 * The in-process doorbell between ingest and the dispatcher. They never call each other: ingest
 * commits to the store and rings; the dispatcher claims from the store. Processes that share a
 * PostgreSQL database find each other's work by polling.
 */
export class OutboxSignal extends Context.Service<OutboxSignal, OutboxSignalShape>()("hookrelay/OutboxSignal") {}

export const make = Effect.gen(function*() {
  const latch = yield* Latch.make(false)
  return OutboxSignal.of({
    notify: Effect.asVoid(latch.open),
    unsafeNotify: () => {
      latch.openUnsafe()
    },
    reset: Effect.asVoid(latch.close),
    wait: (timeout) => Effect.asVoid(Effect.timeoutOption(latch.await, timeout))
  })
})

export const layer = Layer.effect(OutboxSignal, make)
