import {
  Clock,
  ConfigError,
  Context,
  Deferred,
  Duration,
  Effect,
  Either,
  Fiber,
  Layer,
  PubSub,
  Queue,
  type Scope,
  Stream
} from "effect"
import { maxRequestBytes } from "../domain/Limits.js"
import type { MessageType } from "../domain/Message.js"
import { type Batch, batchSink, FlushRequest, type Item, timerFlush } from "./Batch.js"
import {
  type AliasParams,
  type GroupParams,
  type IdentifyParams,
  type PageParams,
  type Prepared,
  prepareMessage,
  type ScreenParams,
  type TrackParams
} from "./Calls.js"
import { debugEnabled, makeDebugLog } from "./Debug.js"
import { ClientClosed, type InvalidMessage, InvalidOptions, type MessageTooLarge } from "./Errors.js"
import {
  type AnalyticsOptions,
  environmentVariables,
  optionsConfig,
  type ResolvedOptions,
  resolveOptions
} from "./Options.js"
import { Outcome } from "./Outcome.js"
import { makeSender } from "./Sender.js"
import { layerUndici, Transport } from "./Transport.js"

/** Why a call was refused. A message dropped because the queue is full is not an error (see `Outcome.Dropped`). */
export type CallError = InvalidMessage | MessageTooLarge | ClientClosed

/** The client library's Effect API (SPEC §9). */
export interface AnalyticsShape {
  /** Records who the user is and their traits. */
  readonly identify: (params: IdentifyParams) => Effect.Effect<void, CallError>
  /** Records an action of the user (`event`). */
  readonly track: (params: TrackParams) => Effect.Effect<void, CallError>
  /** Records a web page view. */
  readonly page: (params: PageParams) => Effect.Effect<void, CallError>
  /** Records a mobile screen view. */
  readonly screen: (params: ScreenParams) => Effect.Effect<void, CallError>
  /** Records that the user belongs to a group. */
  readonly group: (params: GroupParams) => Effect.Effect<void, CallError>
  /** Records that `previousId` and `userId` are one user. */
  readonly alias: (params: AliasParams) => Effect.Effect<void, CallError>
  /** Sends what is queued now and completes when every message queued before it has its outcome. */
  readonly flush: Effect.Effect<void, ClientClosed>
  /**
   * Every outcome from the moment the stream is run: batches sent or failed, messages dropped.
   * It ends when the client is closed. A subscriber more than {@link outcomeBuffer} outcomes behind
   * loses the oldest; the `onOutcome` option sees every one.
   */
  readonly outcomes: Stream.Stream<Outcome>
  /** Like `outcomes`, but subscribed as soon as this effect runs (in the given scope), so nothing after it is missed. */
  readonly subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope>
}

/**
 * The client library as an Effect service. Each call validates, stamps and queues a message
 * (it never waits for the network); batches are sent in the background. Closing the layer's
 * scope flushes everything queued, waits for the batches in flight, and makes later calls fail
 * with `ClientClosed`.
 */
export class Analytics extends Context.Tag("hookrelay/client/Analytics")<Analytics, AnalyticsShape>() {}

/** How many outcomes a slow `outcomes` subscriber may fall behind before the oldest are discarded. */
export const outcomeBuffer = 4096

/** Marks the end of the queue (close) and of the outcome stream. */
const End = Symbol.for("hookrelay/client/End")
type End = typeof End

const isItem = (item: Item | End): item is Item => item !== End
const isOutcome = (item: Outcome | End): item is Outcome => item !== End

const makeResolved = (options: ResolvedOptions): Effect.Effect<AnalyticsShape, never, Transport | Scope.Scope> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const debug = yield* Effect.orElseSucceed(debugEnabled, () => false)
    const log = makeDebugLog(debug)
    const queue = yield* Queue.bounded<Item | End>(options.maxQueueSize)
    const hub = yield* PubSub.sliding<Outcome | End>(outcomeBuffer)
    let state: "open" | "closing" | "closed" = "open"

    const report = (outcome: Outcome): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (options.onOutcome !== undefined) {
          try {
            options.onOutcome(outcome)
          } catch (error) {
            return Effect.zipRight(log(`onOutcome threw: ${String(error)}`), PubSub.publish(hub, outcome))
          }
        }
        return PubSub.publish(hub, outcome)
      })

    const sendBatch = makeSender(options, transport, report, log)

    // Senders: `maxInFlight` long-lived fibers take batches from a hand-off queue. A permit of
    // `inFlight` is held from the moment a batch is handed over until its outcome is reported,
    // so the batcher stops pulling from the queue while every sender is busy (bounded memory),
    // and taking every permit waits until nothing is in flight.
    const inFlight = yield* Effect.makeSemaphore(options.maxInFlight)
    const handOff = yield* Queue.unbounded<Batch>()
    const sender = Effect.forever(
      Effect.flatMap(Queue.take(handOff), (batch) => Effect.ensuring(sendBatch(batch), inFlight.release(1)))
    )
    for (let i = 0; i < options.maxInFlight; i++) yield* Effect.forkScoped(sender)
    const allSent = inFlight.withPermits(options.maxInFlight)(Effect.void)

    // The flush timer: `flushAfter` after the last batch, it puts a flush request in the queue.
    const flushAfterMillis = Duration.toMillis(options.flushAfter)
    let lastFlush = yield* Clock.currentTimeMillis
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const due = lastFlush + flushAfterMillis
      if (now < due) return Effect.sleep(Duration.millis(due - now))
      lastFlush = now
      queue.unsafeOffer(timerFlush) // a full queue makes full batches anyway
      return Effect.void
    })))

    const dispatch = (batch: Batch): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (batch.messages.length > 0) {
          lastFlush = yield* Clock.currentTimeMillis
          yield* inFlight.take(1)
          yield* Queue.offer(handOff, batch)
        }
        if (batch.flushRequests.length > 0) {
          yield* allSent
          for (const request of batch.flushRequests) yield* Deferred.succeed(request.done!, undefined)
        }
      })

    // The batcher: one fiber folds the queue into batches by count, bytes and flush requests
    // (`batchSink`), and ends at the end marker, once every batch it made has its outcome.
    const consumer = yield* Stream.fromQueue(queue, { maxChunkSize: options.flushAt }).pipe(
      Stream.takeWhile(isItem),
      Stream.transduce(batchSink(options.flushAt, maxRequestBytes)),
      Stream.runForEach(dispatch),
      Effect.zipRight(allSent),
      Effect.forkScoped
    )

    const logQueued = (prepared: Prepared): Effect.Effect<void> =>
      debug ? log(`queued ${prepared.message.type} ${prepared.message.messageId}`) : Effect.void

    const dropped = (prepared: Prepared): Effect.Effect<void> =>
      Effect.zipRight(
        log(
          `queue full (${options.maxQueueSize} messages): dropped ${prepared.message.type} ${prepared.message.messageId}`
        ),
        report(Outcome.Dropped({ message: prepared.message }))
      )

    const closed = Effect.fail(new ClientClosed())

    const enqueue = (type: MessageType) => (params: object): Effect.Effect<void, CallError> =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<void, CallError> => {
        if (state !== "open") return closed
        const prepared = prepareMessage(type, params, now)
        if (Either.isLeft(prepared)) return Effect.fail(prepared.left)
        const item = prepared.right
        if (options.overflow === "backpressure") {
          return Effect.flatMap(Queue.offer(queue, item), (accepted) => accepted ? logQueued(item) : closed)
        }
        return queue.unsafeOffer(item) ? logQueued(item) : dropped(item)
      })

    const flush: Effect.Effect<void, ClientClosed> = Effect.suspend(() => {
      if (state !== "open") return closed
      return Effect.flatMap(Deferred.make<void>(), (done) =>
        Effect.zipRight(
          Queue.offer(queue, new FlushRequest(done)),
          Deferred.await(done)
        ))
    })

    const subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope> = Effect.suspend(() =>
      state === "closed"
        ? Effect.succeed(Stream.empty)
        : Effect.map(Stream.fromPubSub(hub, { scoped: true }), (stream) => Stream.takeWhile(stream, isOutcome))
    )

    // Graceful close: the end marker goes behind everything already queued, the batcher sends its
    // last batch and ends once every batch has its outcome.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        state = "closing"
        yield* log("closing: sending what is queued")
        yield* Effect.raceFirst(Queue.offer(queue, End), Fiber.await(consumer))
        yield* Fiber.await(consumer)
        yield* Queue.shutdown(queue)
        state = "closed"
        yield* PubSub.publish(hub, End)
        yield* log("closed")
      })
    )

    return Analytics.of({
      identify: enqueue("identify"),
      track: enqueue("track"),
      page: enqueue("page"),
      screen: enqueue("screen"),
      group: enqueue("group"),
      alias: enqueue("alias"),
      flush,
      outcomes: Stream.unwrapScoped(subscribe),
      subscribe
    })
  })

const resolve = (options: AnalyticsOptions): Effect.Effect<ResolvedOptions, InvalidOptions> =>
  Either.match(resolveOptions(options), { onLeft: Effect.fail, onRight: Effect.succeed })

/**
 * Builds the service over the `Transport` in context; its background work lives in the current
 * scope, and closing that scope closes the client. Fails with `InvalidOptions`.
 */
export const make = (
  options: AnalyticsOptions
): Effect.Effect<AnalyticsShape, InvalidOptions, Transport | Scope.Scope> =>
  Effect.flatMap(resolve(options), makeResolved)

/** The service over a `Transport` you provide (tests, or your own HTTP stack). */
export const layerWithoutTransport = (options: AnalyticsOptions): Layer.Layer<Analytics, InvalidOptions, Transport> =>
  Layer.scoped(Analytics, make(options))

/** The service, sending with its own undici connection pool (`maxInFlight` keep-alive connections). */
export const layer = (options: AnalyticsOptions): Layer.Layer<Analytics, InvalidOptions> =>
  Layer.unwrapEffect(Effect.map(resolve(options), (resolved) =>
    Layer.scoped(Analytics, makeResolved(resolved)).pipe(
      Layer.provide(layerUndici({ connections: resolved.maxInFlight }))
    )))

/**
 * The service configured from the environment through `Config` (names in
 * `environmentVariables`: `HOOKRELAY_WRITE_KEY` (required), `HOOKRELAY_ENDPOINT`,
 * `HOOKRELAY_FLUSH_AT`, `HOOKRELAY_FLUSH_AFTER`, `HOOKRELAY_MAX_QUEUE_SIZE`, `HOOKRELAY_OVERFLOW`,
 * `HOOKRELAY_MAX_RETRIES`, `HOOKRELAY_TIMEOUT`, `HOOKRELAY_MAX_IN_FLIGHT`). `overrides` win over
 * the environment (and are the only way to pass `onOutcome`).
 */
export const layerConfig = (
  overrides: Partial<AnalyticsOptions> = {}
): Layer.Layer<Analytics, InvalidOptions | ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(optionsConfig, (fromEnvironment): Layer.Layer<Analytics, InvalidOptions | ConfigError.ConfigError> => {
      const writeKey = overrides.writeKey ?? fromEnvironment.writeKey
      if (writeKey === undefined) {
        return Layer.fail(ConfigError.MissingData([environmentVariables.writeKey], "the write key is required"))
      }
      return layer({ ...fromEnvironment, ...overrides, writeKey })
    })
  )
