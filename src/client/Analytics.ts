import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { AliasParams, GroupParams, IdentifyParams, PageParams, ScreenParams, TrackParams } from "./Calls.js"
import { Engine, makeEngine } from "./ClientEngine.js"
import type { ClientClosed, InvalidMessage, InvalidOptions, MessageTooLarge } from "./ClientErrors.js"
import { layerNodeHttp, type Transport } from "./ClientTransport.js"
import {
  type AnalyticsOptions,
  environmentVariables,
  optionsConfig,
  type ResolvedOptions,
  resolveOptions
} from "./Options.js"
import type { Outcome } from "./Outcome.js"

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
   * It ends when the client is closed. A subscriber more than `outcomeBuffer` (4 096) outcomes behind
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

const resolve = (options: AnalyticsOptions): Effect.Effect<ResolvedOptions, InvalidOptions> =>
  Either.match(resolveOptions(options), { onLeft: Effect.fail, onRight: Effect.succeed })

/**
 * Builds the service over the `Transport` in context; its background work lives in the current
 * scope, and closing that scope closes the client. Fails with `InvalidOptions`.
 */
export const make = (
  options: AnalyticsOptions
): Effect.Effect<AnalyticsShape, InvalidOptions, Transport | Scope.Scope> =>
  Effect.flatMap(resolve(options), (resolved) => Effect.map(makeEngine(resolved), (engine) => engine.analytics))

/** The service over a `Transport` you provide (tests, or your own HTTP stack). */
export const layerWithoutTransport = (options: AnalyticsOptions): Layer.Layer<Analytics, InvalidOptions, Transport> =>
  Layer.scoped(Analytics, make(options))

/** The engine over its own node:http connection pool (`maxInFlight` keep-alive connections). */
export const engineLayer = (options: ResolvedOptions): Layer.Layer<Engine> =>
  Layer.scoped(Engine, makeEngine(options)).pipe(Layer.provide(layerNodeHttp({ connections: options.maxInFlight })))

/** The service, sending with its own node:http connection pool (`maxInFlight` keep-alive connections). */
export const layer = (options: AnalyticsOptions): Layer.Layer<Analytics, InvalidOptions> =>
  Layer.unwrapEffect(
    Effect.map(resolve(options), (resolved) =>
      Layer.effect(
        Analytics,
        Effect.map(Engine, (engine) => engine.analytics)
      ).pipe(
        Layer.provide(engineLayer(resolved))
      ))
  )

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
