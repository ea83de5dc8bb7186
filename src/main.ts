import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Cause, Config, ConfigProvider, Effect, Exit, Layer, Logger, Option, References, Runtime } from "effect"
import { declaredEnvironment } from "./config/DeclaredEnvironment.js"
import { provision } from "./config/Provisioning.js"
import { operatorWebhookConfig } from "./delivery/OperatorWebhook.js"
import { keepAliveTimeoutConfig, makeNodeServer, requestDeadlineConfig } from "./ingest/NodeServer.js"
import * as Server from "./ingest/Server.js"
import { allowPrivateNetworksConfig } from "./network/EgressPolicy.js"
import { overloadConfig } from "./overload/OverloadConfig.js"
import { layerEngine, settingsVersionFromConfig } from "./relay/RelayLayer.js"
import * as Store from "./store/Store.js"
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
      layerEngine(Store.layerFromConfig, {
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

Effect.flatMap(
  logLevelConfig,
  (level) => Layer.launch(Main).pipe(Effect.provideService(References.MinimumLogLevel, level))
).pipe(
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
