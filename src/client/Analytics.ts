export type { AnalyticsShape } from "./AnalyticsShape.js"
export type { CallError } from "./ClientErrors.js"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type { AnalyticsShape } from "./AnalyticsShape.js"
import { Engine, makeEngine } from "./ClientEngine.js"
import type { InvalidOptions } from "./ClientErrors.js"
import { layerNodeHttp, type Transport } from "./ClientTransport.js"
import {
  type AnalyticsOptions,
  environmentVariables,
  optionsConfig,
  type ResolvedOptions,
  resolveOptions
} from "./Options.js"

/**
 * The client library as an Effect service. Each call validates, stamps and queues a message
 * (it never waits for the network); batches are sent in the background. Closing the layer's
 * scope flushes everything queued, waits for the batches in flight, and makes later calls fail
 * with `ClientClosed`. A refused call fails with a typed `CallError` and is reported as a
 * `Refused` outcome (`onOutcome`, `outcomes`).
 */
export class Analytics extends Context.Service<Analytics, AnalyticsShape>()("hookrelay/client/Analytics") {}

const resolve = (options: AnalyticsOptions): Effect.Effect<ResolvedOptions, InvalidOptions> =>
  Result.match(resolveOptions(options), { onFailure: Effect.fail, onSuccess: Effect.succeed })

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
  Layer.effect(Analytics, make(options))

/** The engine over its own node:http connection pool (`maxInFlight` keep-alive connections). */
export const engineLayer = (options: ResolvedOptions): Layer.Layer<Engine> =>
  Layer.effect(Engine, makeEngine(options)).pipe(Layer.provide(layerNodeHttp({ connections: options.maxInFlight })))

/** The service, sending with its own node:http connection pool (`maxInFlight` keep-alive connections). */
export const layer = (options: AnalyticsOptions): Layer.Layer<Analytics, InvalidOptions> =>
  Layer.unwrap(
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
): Layer.Layer<Analytics, InvalidOptions | Config.ConfigError> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const fromEnvironment = yield* optionsConfig
      // Without a write key, the required variable's own `ConfigError` names it.
      const writeKey = overrides.writeKey ?? fromEnvironment.writeKey ??
        Redacted.value(yield* Config.Redacted(environmentVariables.writeKey))
      return layer({ ...fromEnvironment, ...overrides, writeKey })
    })
  )
