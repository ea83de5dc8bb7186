import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { MessageType } from "../domain/Message.js"
import { makeAdmission } from "./Admission.js"
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
import { makeOutage } from "./Outage.js"
import { boundedRing } from "./RingQueue.js"
import { makeRoomWaiters } from "./RoomWaiters.js"
import { makeSender } from "./Sender.js"
import { makeSlabs, QueuedMessage } from "./Slabs.js"
import type { ClientStats } from "./Status.js"
import { makeStatusHub } from "./StatusHub.js"

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
  /** The counts now. */
  readonly statsNow: () => ClientStats
  /**
   * Closes the client: sends what is queued, waiting at most `timeout`; then reports what is left as
   * `Failure` (`Closed`). The first call decides the timeout; the scope's end closes it with `closeTimeout`.
   */
  readonly close: (timeout: Duration.Duration) => Effect.Effect<void>
  /** `DEBUG=analytics`: the `log` effects say something and are worth running. */
  readonly debug: boolean
}

export class Engine extends Context.Service<Engine, EngineShape>()("hookrelay/client/Engine") {}

const weigh = (item: Item | End): number => item instanceof QueuedMessage ? item.bytes : 0

/** Builds the engine over the `Transport` in context; closing the scope closes the client. */
export const makeEngine = (options: ResolvedOptions): Effect.Effect<EngineShape, never, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const clock = yield* Clock.Clock
    const debug = yield* Effect.orElseSucceed(debugEnabled, () => false)
    const log = makeDebugLog(debug)
    // The queue calls the waiters back when a take makes room; the waiters offer into the queue.
    const queue = yield* boundedRing<Item | End>(
      options.maxQueueSize,
      () => waiters.onRoom(),
      options.maxQueueBytes,
      weigh
    )
    const waiters = makeRoomWaiters<QueuedMessage>((item) => queue.offerUnsafe(item))
    const slabs = makeSlabs()
    const outcomes = yield* makeClientOutcomes(options, debug, log)
    const status = yield* makeStatusHub(options.onStatus, outcomes.held, log)
    const recovery = { draining: false, held: outcomes.held }
    const outage = yield* makeOutage({
      started: status.started,
      ended: (downtimeMillis) =>
        Effect.andThen(Effect.sync(() => (recovery.draining = true)), status.ended(downtimeMillis))
    })
    let state: "open" | "closing" | "closed" = "open"

    const sendBatch = makeSender(options, transport, outcomes, outage, clock, log)
    const bodies = makeBodyPool(options.maxInFlight)
    const batching = yield* forkBatching(options, { queue, waiters, slabs, bodies, sendBatch, clock, recovery })
    const offerNow = makeAdmission(options, { queue, waiters, slabs, outcomes }, () => state === "open")
    const { refuseNow } = outcomes
    const closed = Effect.fail(new ClientClosed())

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
    const consumerEnded = Effect.asVoid(Fiber.await(batching.consumer))
    const flush: Effect.Effect<void, ClientClosed> = Effect.suspend(() => {
      if (state !== "open") return closed
      const done = Deferred.makeUnsafe<void>()
      const request = new FlushRequest(done)
      // At once when there is room, so that the request has its place among the calls around it.
      const offered = !waiters.waiting() && queue.offerUnsafe(request)
      const placed = offered ? Effect.void : Effect.andThen(waiters.drained, queue.offer(request))
      return Effect.raceFirst(Effect.andThen(placed, Deferred.await(done)), consumerEnded)
    })

    // The end marker goes behind everything already queued (calls waiting for room were accepted:
    // they go in first); the batcher sends its last batch and ends once every batch has its outcome.
    const sendTheRest = Effect.gen(function*() {
      yield* waiters.drained
      yield* Effect.raceFirst(queue.offer(End), consumerEnded)
      yield* consumerEnded
    })
    // Past the timeout, nothing more is sent: the batches are reported as they reach the senders.
    const giveUp = Effect.gen(function*() {
      yield* log("close timed out: reporting what is left as failed")
      outage.close()
      yield* batching.restartSenders
      yield* sendTheRest
    })
    const closing = Deferred.makeUnsafe<void>()
    const close = (timeout: Duration.Duration): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (state !== "open") return Deferred.await(closing)
        state = "closing"
        return Effect.gen(function*() {
          yield* log("closing: sending what is queued")
          const sent = yield* Effect.timeoutOption(sendTheRest, timeout)
          if (sent._tag === "None") yield* giveUp
          yield* queue.shutdown
          state = "closed"
          yield* outcomes.end
          yield* status.end
          yield* log("closed")
        }).pipe(Effect.ensuring(Deferred.succeed(closing, undefined)))
      })
    yield* Effect.addFinalizer(() => close(options.closeTimeout))

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
        subscribe: outcomes.subscribe,
        status: status.changes,
        stats: Effect.sync(outcomes.stats)
      },
      offerNow,
      refuseNow,
      statsNow: outcomes.stats,
      close,
      debug
    }
  })
