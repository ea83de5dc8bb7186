import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { inspect } from "node:util"
import { maxRequestBytes } from "../domain/Limits.js"
import type { MessageType } from "../domain/Message.js"
import type { AnalyticsShape } from "./AnalyticsShape.js"
import {
  type Batch,
  type BatchBody,
  batchSink,
  FlushRequest,
  type Item,
  timerFlush,
  writeBatchBody
} from "./Batcher.js"
import { makeBodyPool } from "./BodyPool.js"
import { messageOf, type Prepared, prepareMessage } from "./Calls.js"
import { type CallError, ClientClosed } from "./ClientErrors.js"
import { Transport } from "./ClientTransport.js"
import { debugEnabled, makeDebugLog } from "./Debug.js"
import type { ResolvedOptions } from "./Options.js"
import { notifyOutcome, Outcome } from "./Outcome.js"
import { boundedRing } from "./RingQueue.js"
import { makeRoomWaiters } from "./RoomWaiters.js"
import { makeSender } from "./Sender.js"
import { makeSlabs, type QueuedMessage } from "./Slabs.js"

/** How many outcomes a slow `outcomes` subscriber may fall behind before the oldest are discarded. */
export const outcomeBuffer = 4096

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

export class Engine extends Context.Tag("hookrelay/client/Engine")<Engine, EngineShape>() {}

/** Marks the end of the queue (close) and of the outcome stream. */
const End = Symbol.for("hookrelay/client/End")
type End = typeof End

const isItem = (item: Item | End): item is Item => item !== End
const isOutcome = (item: Outcome | End): item is Outcome => item !== End

/** Builds the engine over the `Transport` in context; closing the scope closes the client. */
export const makeEngine = (options: ResolvedOptions): Effect.Effect<EngineShape, never, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const clock = yield* Effect.clock
    const debug = yield* Effect.orElseSucceed(debugEnabled, () => false)
    const log = makeDebugLog(debug)
    // The queue calls the waiters back when a take makes room; the waiters offer into the queue.
    const queue = yield* boundedRing<Item | End>(options.maxQueueSize, () => waiters.onRoom())
    const waiters = makeRoomWaiters<QueuedMessage>((item) => queue.unsafeOffer(item))
    const slabs = makeSlabs()
    const bodies = makeBodyPool(options.maxInFlight)
    const hub = yield* PubSub.sliding<Outcome | End>(outcomeBuffer)
    let state: "open" | "closing" | "closed" = "open"
    let subscribers = 0
    const observed = () => options.onOutcome !== undefined || subscribers > 0

    // Outcomes are reported synchronously, so that a call reports its refusal or drop without a
    // fiber and after close too (the hub has ended then: only `onOutcome` hears it).
    const reportNow = (outcome: Outcome): unknown => {
      const thrown = notifyOutcome(options.onOutcome, outcome)
      if (state !== "closed") hub.unsafeOffer(outcome)
      return thrown
    }
    const logThrown = (thrown: unknown): Effect.Effect<void> =>
      thrown === undefined ? Effect.void : log(`onOutcome threw: ${inspect(thrown)}`)
    const report = (outcome: Outcome): Effect.Effect<void> => Effect.suspend(() => logThrown(reportNow(outcome)))

    const sendBatch = makeSender(options, transport, { observed, report }, log)

    // Senders: `maxInFlight` long-lived fibers take batches from a hand-off queue. A permit of
    // `inFlight` is held from the moment a batch's body is written until its outcome is reported,
    // so the batcher stops pulling from the queue while every sender is busy (bounded memory),
    // and taking every permit waits until nothing is in flight.
    const inFlight = yield* Effect.makeSemaphore(options.maxInFlight)
    const handOff = yield* Queue.unbounded<BatchBody>()
    const done = (body: BatchBody) =>
      Effect.zipRight(Effect.sync(() => bodies.release(body.storage)), inFlight.release(1))
    const sender = Effect.forever(
      Effect.flatMap(Queue.take(handOff), (body) => Effect.ensuring(sendBatch(body), done(body)))
    )
    for (let i = 0; i < options.maxInFlight; i++) yield* Effect.forkScoped(sender)
    const allSent = inFlight.withPermits(options.maxInFlight)(Effect.void)

    // The flush timer: `flushAfter` after the last batch, it puts a flush request in the queue.
    const flushAfterMillis = Duration.toMillis(options.flushAfter)
    let lastFlush = clock.unsafeCurrentTimeMillis()
    yield* Effect.forkScoped(Effect.forever(Effect.suspend(() => {
      const now = clock.unsafeCurrentTimeMillis()
      const due = lastFlush + flushAfterMillis
      if (now < due) return Effect.sleep(Duration.millis(due - now))
      lastFlush = now
      queue.unsafeOffer(timerFlush) // a full queue makes full batches anyway
      return Effect.void
    })))

    const dispatch = (batch: Batch): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (batch.messages.length > 0) {
          lastFlush = clock.unsafeCurrentTimeMillis()
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
    // (`Stream.aggregateWithin` measured ~0.85 ms per batch here, forking two fibers per batch;
    // the flush timer above is one fiber for the client's life.)
    const refuseWaiting = () => {
      for (const item of waiters.refuseAll()) slabs.release(item)
    }
    const consumer = yield* Stream.fromQueue(queue, { maxChunkSize: options.flushAt }).pipe(
      Stream.takeWhile(isItem),
      Stream.transduce(batchSink(options.flushAt, maxRequestBytes)),
      Stream.runForEach(dispatch),
      Effect.zipRight(allSent),
      Effect.ensuring(Effect.sync(refuseWaiting)),
      Effect.forkScoped
    )

    const closed = Effect.fail(new ClientClosed())

    const refuseNow = (type: MessageType, error: CallError): Refusal => {
      const thrown = observed() ? reportNow(Outcome.Refused({ type, error })) : undefined
      return {
        _tag: "Refused",
        error,
        log: debug ? Effect.zipRight(log(`refused ${type}: ${error.message}`), logThrown(thrown)) : Effect.void
      }
    }

    const quietlyQueued = { _tag: "Queued", log: Effect.void } as const
    const queued = (prepared: Prepared): { readonly _tag: "Queued"; readonly log: Effect.Effect<void> } =>
      debug ? { _tag: "Queued", log: log(`queued ${prepared.type} ${prepared.messageId}`) } : quietlyQueued

    const dropped = (prepared: Prepared): Enqueued => {
      const thrown = observed() ? reportNow(Outcome.Dropped({ message: messageOf(prepared) })) : undefined
      return {
        _tag: "Dropped",
        log: debug
          ? Effect.zipRight(
            log(`queue full (${options.maxQueueSize} messages): dropped ${prepared.type} ${prepared.messageId}`),
            logThrown(thrown)
          )
          : Effect.void
      }
    }

    // A message waiting for room holds its slab bytes while it waits. If its fiber is interrupted,
    // they are not released (it may have been queued at that very moment): the slab is then not
    // reused, and the garbage collector frees it.
    const offerWhenRoom = (prepared: Prepared, item: QueuedMessage): Effect.Effect<void, ClientClosed> =>
      Effect.flatMap(Queue.offer(queue, item), (accepted) => {
        if (accepted) return queued(prepared).log
        slabs.release(item)
        return Effect.zipRight(refuseNow(prepared.type, new ClientClosed()).log, closed)
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
      if (!waiters.waiting() && queue.unsafeOffer(item)) return queued(prepared)
      if (options.overflow === "drop") {
        slabs.release(item)
        return dropped(prepared)
      }
      // One of the two runs: `wait` for the Effect API, `waitPromise` for the Promise facade.
      return { _tag: "Wait", wait: offerWhenRoom(prepared, item), waitPromise: () => waitForRoom(prepared, item) }
    }

    const enqueue = (type: MessageType) => (params: object): Effect.Effect<void, CallError> =>
      Effect.suspend(() => {
        if (state !== "open") return Effect.zipRight(refuseNow(type, new ClientClosed()).log, closed)
        const prepared = prepareMessage(type, params, clock.unsafeCurrentTimeMillis())
        const enqueued = Either.isLeft(prepared) ? refuseNow(type, prepared.left) : offerNow(prepared.right)
        switch (enqueued._tag) {
          case "Queued":
          case "Dropped":
            return enqueued.log
          case "Wait":
            return enqueued.wait
          case "Refused":
            return Effect.zipRight(enqueued.log, Effect.fail(enqueued.error))
        }
      })

    // A flush request goes behind every message queued before it (and behind the calls waiting for
    // room); once the batcher has ended, every batch has its outcome, so the flush is done too.
    const consumerEnded = Effect.asVoid(Fiber.await(consumer))
    const flush: Effect.Effect<void, ClientClosed> = Effect.suspend(() => {
      if (state !== "open") return closed
      const done = Deferred.unsafeMake<void>(FiberId.none)
      const request = new FlushRequest(done)
      // At once when there is room, so that the request has its place among the calls around it.
      const offered = !waiters.waiting() && queue.unsafeOffer(request)
      const queued = offered ? Effect.void : Effect.zipRight(waiters.drained, Queue.offer(queue, request))
      return Effect.raceFirst(Effect.zipRight(queued, Deferred.await(done)), consumerEnded)
    })

    const subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope> = Effect.suspend(() =>
      state === "closed"
        ? Effect.succeed(Stream.empty)
        : Effect.acquireRelease(
          Effect.sync(() => subscribers++),
          () => Effect.sync(() => subscribers--)
        ).pipe(
          Effect.zipRight(Stream.fromPubSub(hub, { scoped: true })),
          Effect.map((stream) => Stream.takeWhile(stream, isOutcome))
        )
    )

    // Graceful close: the end marker goes behind everything already queued, the batcher sends its
    // last batch and ends once every batch has its outcome.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        state = "closing"
        yield* log("closing: sending what is queued")
        // Calls waiting for room were accepted: they go in before the end marker (or are refused if
        // the batcher has ended).
        yield* waiters.drained
        yield* Effect.raceFirst(Queue.offer(queue, End), Fiber.await(consumer))
        yield* Fiber.await(consumer)
        yield* Queue.shutdown(queue)
        state = "closed"
        yield* PubSub.publish(hub, End)
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
        outcomes: Stream.unwrapScoped(subscribe),
        subscribe
      },
      offerNow,
      refuseNow,
      debug
    }
  })
