import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import { maxRequestBytes } from "../domain/Limits.js"
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
  readonly sendBatch: (body: BatchBody) => Effect.Effect<void>
  readonly clock: Clock.Clock
}

const isItem = (item: Item | End): item is Item => item !== End

interface Senders {
  /** One permit per sender, held from a batch's body until its outcome. */
  readonly inFlight: Semaphore.Semaphore
  readonly handOff: Queue.Queue<BatchBody>
  /** Completes once nothing is in flight. */
  readonly allSent: Effect.Effect<void>
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
    const done = (body: BatchBody) =>
      Effect.andThen(Effect.sync(() => bodies.release(body.storage)), inFlight.release(1))
    const sender = Effect.forever(
      Effect.flatMap(Queue.take(handOff), (body) => Effect.ensuring(sendBatch(body), done(body)))
    )
    for (let i = 0; i < options.maxInFlight; i++) yield* Effect.forkScoped(sender)
    return { inFlight, handOff, allSent: inFlight.withPermits(options.maxInFlight)(Effect.void) }
  })

/**
 * Forks the senders, the flush timer and the batcher; returns the batcher's fiber, which ends at
 * the end marker once every batch it made has its outcome.
 */
export const forkBatching = (
  options: ResolvedOptions,
  parts: BatchingParts
): Effect.Effect<Fiber.Fiber<void>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { bodies, clock, queue, slabs, waiters } = parts
    const { allSent, handOff, inFlight } = yield* forkSenders(options, parts)

    // The flush timer: `flushAfter` after the last batch, it puts a flush request in the queue.
    const flushAfterMillis = Duration.toMillis(options.flushAfter)
    let lastFlush = clock.currentTimeMillisUnsafe()
    yield* Effect.forkScoped(Effect.forever(Effect.suspend(() => {
      const now = clock.currentTimeMillisUnsafe()
      const due = lastFlush + flushAfterMillis
      if (now < due) return Effect.sleep(Duration.millis(due - now))
      lastFlush = now
      queue.offerUnsafe(timerFlush) // a full queue makes full batches anyway
      return Effect.void
    })))

    const dispatch = (batch: Batch): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (batch.messages.length > 0) {
          lastFlush = clock.currentTimeMillisUnsafe()
          yield* inFlight.take(1)
          yield* Queue.offer(handOff, writeBatchBody(batch, slabs, bodies))
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
    return yield* Stream.fromPull(Effect.succeed(queue.takeUpTo(options.flushAt))).pipe(
      Stream.takeWhile(isItem),
      Stream.transduce(batchSink(options.flushAt, maxRequestBytes)),
      Stream.runForEach(dispatch),
      Effect.andThen(allSent),
      Effect.ensuring(Effect.sync(refuseWaiting)),
      Effect.forkScoped
    )
  })
