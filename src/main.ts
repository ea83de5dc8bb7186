import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Logger, Metric, Option, References, Runtime } from "effect"
import { declaredEnvironment } from "./config/DeclaredEnvironment.js"
import { provision } from "./config/Provisioning.js"
import { operatorWebhookConfig } from "./delivery/OperatorWebhook.js"
import { keepAliveTimeoutConfig, makeNodeServer, requestDeadlineConfig } from "./ingest/NodeServer.js"
import * as Server from "./ingest/Server.js"
import { secretDecryptions } from "./metrics/Metrics.js"
import { allowPrivateNetworksConfig } from "./network/EgressPolicy.js"
import { overloadConfig } from "./overload/OverloadConfig.js"
import { layerEngine, settingsVersionFromConfig } from "./relay/RelayLayer.js"
import { secretKeysProblem } from "./store/SecretBox.js"
import { layerFromConfigSealed } from "./store/SecretKeysConfig.js"
import { retentionConfig } from "./store/StoreConfig.js"
import { logLevelConfig } from "./telemetry/LogLevel.js"
import * as Telemetry from "./telemetry/Telemetry.js"
import { telemetryConfig } from "./telemetry/TelemetryConfig.js"

/**
 * The hookrelay server (REFERENCE §7): configuration from the environment, the store it selects
 * (SQLite under HOOKRELAY_DATA_DIR, or PostgreSQL at DATABASE_URL), sources provisioned from
 * HOOKRELAY_CONFIG, the dispatcher, and the HTTP server. JSON logs from HOOKRELAY_LOG_LEVEL up; traces and metrics
 * over OTLP/HTTP when an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT). SIGTERM/SIGINT stop accepting, finish or
 * release in-flight work, and exit 0.
 */
const serverConfig = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(8080)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  adminToken: Config.option(Config.Redacted("HOOKRELAY_ADMIN_TOKEN")),
  configFile: Config.option(Config.String("HOOKRELAY_CONFIG")),
  keepAliveTimeout: keepAliveTimeoutConfig,
  requestDeadline: requestDeadlineConfig
})

const Engine = Layer.unwrap(
  Effect.map(
    Config.all({
      retention: retentionConfig,
      overload: overloadConfig,
      allowPrivateNetworks: allowPrivateNetworksConfig,
      operatorWebhook: operatorWebhookConfig
    }),
    ({ allowPrivateNetworks, operatorWebhook, overload, retention }) =>
      // Stored secrets sealed with HOOKRELAY_SECRET_KEYS (or the SQLite key file), checked before anything runs.
      layerEngine(layerFromConfigSealed(Metric.update(secretDecryptions, 1)), {
        retention,
        overload,
        allowPrivateNetworks,
        operatorWebhook: Option.getOrUndefined(operatorWebhook),
        settingsVersion: settingsVersionFromConfig
      })
  )
)

const Main = Layer.unwrap(Effect.gen(function*() {
  const config = yield* serverConfig
  const telemetry = yield* telemetryConfig
  const provisioning = Option.match(config.configFile, {
    onNone: () => Layer.empty,
    onSome: (path) => Layer.effectDiscard(provision(path))
  })
  const http = Server.layer({
    adminToken: config.adminToken,
    requestDeadline: config.requestDeadline,
    traceTracking: Telemetry.tracesRequests(telemetry)
  }).pipe(
    Layer.provide(provisioning),
    Layer.provide(
      NodeHttpServer.layer(makeNodeServer(config.keepAliveTimeout), { port: config.port, host: config.host })
    ),
    Layer.tap(() => Effect.logInfo(`hookrelay listening on http://${config.host}:${config.port}`))
  )
  yield* Effect.logDebug("telemetry").pipe(Effect.annotateLogs({
    traces: Option.exists(telemetry, (options) => options.traces !== undefined),
    metrics: Option.exists(telemetry, (options) => options.metrics !== undefined)
  }))
  // Outermost: its tracer is every span's, and it closes last, exporting what the engine's shutdown traced.
  return http.pipe(Layer.provide(Engine), Layer.provide(Telemetry.layer(telemetry)))
}))

/** A start refused with its one line already printed: exit code 1, not logged again by the runtime. */
class Refused {
  readonly [Runtime.errorReported] = false
  readonly [Runtime.errorExitCode] = 1
}

/**
 * A start that fails for the keys of the stored secrets (`HOOKRELAY_SECRET_KEYS`, the SQLite key file) ends with one
 * line on stderr naming the problem, instead of the failure's full rendering.
 */
const startRefused = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E | Refused, R> =>
  Effect.catchCause(self, (cause): Effect.Effect<never, E | Refused> => {
    const problem = secretKeysProblem(Cause.squash(cause))
    if (problem === undefined) return Effect.failCause(cause)
    return Effect.andThen(
      Effect.sync(() => process.stderr.write(`hookrelay: ${problem}\n`)),
      Effect.fail(new Refused())
    )
  })

Effect.flatMap(
  logLevelConfig,
  (level) => Layer.launch(Main).pipe(Effect.provideService(References.MinimumLogLevel, level))
).pipe(
  // Keys that cannot open the stored secrets (or are missing or malformed): one line, exit 1, nothing written.
  (main) => startRefused(main),
  // JSON lines, and log lines as events of the current span as before.
  Effect.provide(Logger.layer([Logger.consoleJson, Logger.tracerLogger])),
  // The environment the configuration table declares, and nothing else.
  Effect.provideService(ConfigProvider.ConfigProvider, declaredEnvironment()),
  // A stop by SIGTERM/SIGINT (the main fiber interrupted, nothing else) is a clean exit: 0, not Effect's 130.
  NodeRuntime.runMain({
    teardown: (exit, onExit) =>
      Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
  })
)
