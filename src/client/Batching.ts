import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { maxBatchMessages, maxRequestBytes } from "../domain/Limits.js"
import { type Batch, type BatchBody, batchSink, type Item, timerFlush, writeBatchBody } from "./Batcher.js"
import type { BodyPool } from "./BodyPool.js"
import { End } from "./End.js"
import type { ResolvedOptions } from "./Options.js"
import type { RingQueue } from "./RingQueue.js"
import type { RoomWaiters } from "./RoomWaiters.js"
import type { QueuedMessage, Slabs } from "./Slabs.js"

/** What the batching fibers work on: the engine's queue, its waiting calls and its buffers. */
export interface BatchingParts {
  readonly queue: RingQueue<Item | End>
  readonly waiters: RoomWaiters<QueuedMessage>
  readonly slabs: Slabs
  readonly bodies: BodyPool
  readonly sendBatch: (body: BatchBody, seq: number) => Effect.Effect<void>
  readonly clock: Clock.Clock
  /** Set when an outage ends: the messages it held go out in batches as large as a request may be. */
  readonly recovery: Recovery
}

/** Whether the backlog an outage left is being sent; the batcher clears it once little is held. */
export interface Recovery {
  draining: boolean
  /** Messages queued or being sent now. */
  readonly held: () => number
}

const isItem = (item: Item | End): item is Item => item !== End

interface Senders {
  /** One permit per sender, held from a batch's body until its outcome. */
  readonly inFlight: Semaphore.Semaphore
  readonly handOff: Queue.Queue<BatchBody>
  /** Completes once nothing is in flight. */
  readonly allSent: Effect.Effect<void>
  /** Interrupts the batches being sent (each reports what is left of it) and starts new senders. */
  readonly restart: Effect.Effect<void>
}

/** The batching fibers' handles: the batcher's fiber and the senders' restart. */
export interface Batching {
  /** Ends at the end marker, once every batch made has its outcome. */
  readonly consumer: Fiber.Fiber<void>
  readonly restartSenders: Effect.Effect<void>
}

// Senders: `maxInFlight` long-lived fibers take batches from a hand-off queue. A permit of
// `inFlight` is held from the moment a batch's body is written until its outcome is reported,
// so the batcher stops pulling from the queue while every sender is busy (bounded memory),
// and taking every permit waits until nothing is in flight.
const forkSenders = (
  options: ResolvedOptions,
  { bodies, sendBatch }: BatchingParts
): Effect.Effect<Senders, never, Scope.Scope> =>
  Effect.gen(function*() {
    const inFlight = yield* Semaphore.make(options.maxInFlight)
    const handOff = yield* Queue.unbounded<BatchBody>()
    // The senders' own scope, closed after the client's close: a close that times out restarts them,
    // and a scope being closed takes no new fibers.
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const done = (body: BatchBody) =>
      Effect.andThen(Effect.sync(() => bodies.release(body.storage)), inFlight.release(1))
    // A batch taken from the hand-off is always sent or reported, and its permit released, even
    // when the sender is interrupted right after the take.
    const sender = Effect.forever(
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(
          restore(Queue.take(handOff)),
          (body) => Effect.ensuring(restore(sendBatch(body, body.seq)), done(body))
        )
      )
    )
    const start = Effect.forEach(
      Array.from({ length: options.maxInFlight }),
      () => Effect.forkIn(sender, scope),
      { concurrency: 1 }
    )
    let fibers = yield* start
    const restart = Effect.gen(function*() {
      const stopped = fibers
      fibers = []
      yield* Fiber.interruptAll(stopped)
      fibers = yield* start
    })
    return { inFlight, handOff, allSent: inFlight.withPermits(options.maxInFlight)(Effect.void), restart }
  })

/**
 * Forks the senders, the flush timer and the batcher; returns the batcher's fiber, which ends at
 * the end marker once every batch it made has its outcome, and the senders' restart.
 */
export const forkBatching = (
  options: ResolvedOptions,
  parts: BatchingParts
): Effect.Effect<Batching, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { bodies, clock, queue, recovery, slabs, waiters } = parts
    // After an outage, batches of `flushAt` would send the backlog a few dozen messages a request.
    const batchLimit = () => recovery.draining ? maxBatchMessages : options.flushAt
    const { allSent, handOff, inFlight, restart } = yield* forkSenders(options, parts)

    // The flush timer: `flushAfter` after the last batch, it puts a flush request in the queue.
    const flushAfterMillis = Duration.toMillis(options.flushAfter)
    let lastFlush = clock.currentTimeMillisUnsafe()
    // One timer request in the queue at a time: while the batcher waits (an outage), they would pile up.
    let timerQueued = false
    yield* Effect.forkScoped(Effect.forever(Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      const due = lastFlush + flushAfterMillis
      if (now < due) return Effect.sleep(Duration.millis(due - now))
      lastFlush = now
      if (!timerQueued) timerQueued = queue.offerUnsafe(timerFlush) // a full queue makes full batches anyway
      return Effect.void
    })))
    let batches = 0

    const dispatch = (batch: Batch): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (batch.timed) timerQueued = false
        if (batch.messages.length > 0) {
          lastFlush = clock.currentTimeMillisUnsafe()
          yield* inFlight.take(1)
          yield* Queue.offer(handOff, writeBatchBody(batch, slabs, bodies, ++batches))
          // The backlog is out once what is held besides this batch would fit one batch per sender.
          const behind = recovery.held() - batch.messages.length
          if (recovery.draining && behind <= options.flushAt * options.maxInFlight) recovery.draining = false
        }
        if (batch.flushRequests.length > 0) {
          yield* allSent
          for (const request of batch.flushRequests) yield* Deferred.succeed(request.done!, undefined)
        }
      })

    // The batcher: one fiber folds the queue into batches by count, bytes and flush requests
    // (`batchSink`), and ends at the end marker, once every batch it made has its outcome.
    // (`Stream.aggregateWithin` forks two fibers per batch, and cost more per batch here; the
    // flush timer above is one fiber for the client's life.)
    const refuseWaiting = () => {
      for (const item of waiters.refuseAll()) slabs.release(item)
    }
    const consumer = yield* Stream.fromPull(Effect.succeed(Effect.suspend(() => queue.takeUpTo(batchLimit())))).pipe(
      Stream.takeWhile(isItem),
      Stream.transduce(batchSink(batchLimit, maxRequestBytes)),
      Stream.runForEach(dispatch),
      Effect.andThen(allSent),
      Effect.ensuring(Effect.sync(refuseWaiting)),
      Effect.forkScoped
    )
    return { consumer, restartSenders: restart }
  })
