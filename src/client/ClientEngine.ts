import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { MessageType } from "../domain/Message.js"
import type { AnalyticsShape } from "./AnalyticsShape.js"
import { FlushRequest, type Item } from "./Batcher.js"
import { forkBatching } from "./Batching.js"
import { makeBodyPool } from "./BodyPool.js"
import { type Prepared, prepareMessage } from "./Calls.js"
import { type CallError, ClientClosed } from "./ClientErrors.js"
import { makeClientOutcomes } from "./ClientOutcomes.js"
import { Transport } from "./ClientTransport.js"
import { debugEnabled, makeDebugLog } from "./Debug.js"
import { End } from "./End.js"
import type { ResolvedOptions } from "./Options.js"
import { boundedRing } from "./RingQueue.js"
import { makeRoomWaiters } from "./RoomWaiters.js"
import { makeSender } from "./Sender.js"
import { makeSlabs, type QueuedMessage } from "./Slabs.js"

export { outcomeBuffer } from "./ClientOutcomes.js"

/**
 * What became of a call, decided at once, without running an effect. Whatever had to be reported
 * (`Dropped`, `Refused` outcomes) was reported; `log` is the `DEBUG=analytics` line to run, if any.
 */
export type Enqueued =
  | { readonly _tag: "Queued"; readonly log: Effect.Effect<void> }
  | { readonly _tag: "Dropped"; readonly log: Effect.Effect<void> }
  /**
   * The queue was full and `overflow` is `"backpressure"`: `wait` queues the message once there is
   * room; `waitPromise` does the same without running an effect (for the Promise facade).
   */
  | {
    readonly _tag: "Wait"
    readonly wait: Effect.Effect<void, ClientClosed>
    readonly waitPromise: () => Promise<void>
  }
  | Refusal

/** A refused call, already reported as a `Refused` outcome. */
export interface Refusal {
  readonly _tag: "Refused"
  readonly error: CallError
  readonly log: Effect.Effect<void>
}

/**
 * The client's engine: the `Analytics` service, plus the synchronous entries the Promise facade
 * uses so that a call costs no fiber and keeps its place in the order of calls (a call is
 * synchronous unless it must wait for room).
 */
export interface EngineShape {
  readonly analytics: AnalyticsShape
  /** Queues a message that `prepareMessage` accepted. */
  readonly offerNow: (prepared: Prepared) => Enqueued
  /** Reports a refused call (a `Refused` outcome); usable after close too. */
  readonly refuseNow: (type: MessageType, error: CallError) => Refusal
  /** `DEBUG=analytics`: the `log` effects say something and are worth running. */
  readonly debug: boolean
}

export class Engine extends Context.Service<Engine, EngineShape>()("hookrelay/client/Engine") {}

/** Builds the engine over the `Transport` in context; closing the scope closes the client. */
export const makeEngine = (options: ResolvedOptions): Effect.Effect<EngineShape, never, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const clock = yield* Clock.Clock
    const debug = yield* Effect.orElseSucceed(debugEnabled, () => false)
    const log = makeDebugLog(debug)
    // The queue calls the waiters back when a take makes room; the waiters offer into the queue.
    const queue = yield* boundedRing<Item | End>(options.maxQueueSize, () => waiters.onRoom())
    const waiters = makeRoomWaiters<QueuedMessage>((item) => queue.offerUnsafe(item))
    const slabs = makeSlabs()
    const bodies = makeBodyPool(options.maxInFlight)
    const outcomes = yield* makeClientOutcomes(options, debug, log)
    const { dropped, queued, refuseNow } = outcomes
    let state: "open" | "closing" | "closed" = "open"

    const sendBatch = makeSender(options, transport, outcomes, log)
    const consumer = yield* forkBatching(options, { queue, waiters, slabs, bodies, sendBatch, clock })

    const closed = Effect.fail(new ClientClosed())

    // A message waiting for room holds its slab bytes while it waits. If its fiber is interrupted,
    // they are not released (it may have been queued at that very moment): the slab is then not
    // reused, and the garbage collector frees it.
    const offerWhenRoom = (prepared: Prepared, item: QueuedMessage): Effect.Effect<void, ClientClosed> =>
      Effect.flatMap(queue.offer(item), (accepted) => {
        if (accepted) return queued(prepared).log
        slabs.release(item)
        return Effect.andThen(refuseNow(prepared.type, new ClientClosed()).log, closed)
      })

    const waitForRoom = (prepared: Prepared, item: QueuedMessage): Promise<void> =>
      waiters.wait(item).then((isQueued) => {
        if (isQueued) return
        slabs.release(item)
        throw refuseNow(prepared.type, new ClientClosed()).error
      })

    const offerNow = (prepared: Prepared): Enqueued => {
      if (state !== "open") return refuseNow(prepared.type, new ClientClosed())
      const item = slabs.store(prepared)
      // Behind calls already waiting for room, a message waits too: calls keep their order.
      if (!waiters.waiting() && queue.offerUnsafe(item)) return queued(prepared)
      if (options.overflow === "drop") {
        slabs.release(item)
        return dropped(prepared)
      }
      // One of the two runs: `wait` for the Effect API, `waitPromise` for the Promise facade.
      return { _tag: "Wait", wait: offerWhenRoom(prepared, item), waitPromise: () => waitForRoom(prepared, item) }
    }

    const enqueue = (type: MessageType) => (params: object): Effect.Effect<void, CallError> =>
      Effect.suspend(() => {
        if (state !== "open") return Effect.andThen(refuseNow(type, new ClientClosed()).log, closed)
        const prepared = prepareMessage(type, params, clock.currentTimeMillisUnsafe())
        const enqueued = Result.isFailure(prepared) ? refuseNow(type, prepared.failure) : offerNow(prepared.success)
        switch (enqueued._tag) {
          case "Queued":
          case "Dropped":
            return enqueued.log
          case "Wait":
            return enqueued.wait
          case "Refused":
            return Effect.andThen(enqueued.log, Effect.fail(enqueued.error))
        }
      })

    // A flush request goes behind every message queued before it (and behind the calls waiting for
    // room); once the batcher has ended, every batch has its outcome, so the flush is done too.
    const consumerEnded = Effect.asVoid(Fiber.await(consumer))
    const flush: Effect.Effect<void, ClientClosed> = Effect.suspend(() => {
      if (state !== "open") return closed
      const done = Deferred.makeUnsafe<void>()
      const request = new FlushRequest(done)
      // At once when there is room, so that the request has its place among the calls around it.
      const offered = !waiters.waiting() && queue.offerUnsafe(request)
      const placed = offered ? Effect.void : Effect.andThen(waiters.drained, queue.offer(request))
      return Effect.raceFirst(Effect.andThen(placed, Deferred.await(done)), consumerEnded)
    })

    // Graceful close: the end marker goes behind everything already queued, the batcher sends its
    // last batch and ends once every batch has its outcome.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        state = "closing"
        yield* log("closing: sending what is queued")
        // Calls waiting for room were accepted: they go in before the end marker (or are refused if
        // the batcher has ended).
        yield* waiters.drained
        yield* Effect.raceFirst(queue.offer(End), Fiber.await(consumer))
        yield* Fiber.await(consumer)
        yield* queue.shutdown
        state = "closed"
        yield* outcomes.end
        yield* log("closed")
      })
    )

    return {
      analytics: {
        identify: enqueue("identify"),
        track: enqueue("track"),
        page: enqueue("page"),
        screen: enqueue("screen"),
        group: enqueue("group"),
        alias: enqueue("alias"),
        flush,
        outcomes: Stream.unwrap(outcomes.subscribe),
        subscribe: outcomes.subscribe
      },
      offerNow,
      refuseNow,
      debug
    }
  })
