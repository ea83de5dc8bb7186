import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Duration, Effect, Option } from "effect"
import type { Config } from "effect"
import { logLevelConfig } from "../../src/telemetry/LogLevel.js"
import { telemetryConfig } from "../../src/telemetry/TelemetryConfig.js"

const text = (error: Config.ConfigError) => Cause.pretty(Cause.fail(error))

/** `config` read from `env` as the process environment. */
const withEnv = (env: Record<string, string>) => <A>(config: Config.Config<A>) =>
  config.parse(ConfigProvider.fromEnv({ env }))

describe("HOOKRELAY_LOG_LEVEL", () => {
  it.effect("defaults to info, and takes a level's name in any case", () =>
    Effect.gen(function*() {
      expect(yield* withEnv({})(logLevelConfig)).toBe("Info")
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "debug" })(logLevelConfig)).toBe("Debug")
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "Warning" })(logLevelConfig)).toBe("Warn")
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "NONE" })(logLevelConfig)).toBe("None")
    }))

  it.effect("refuses another value, naming the variable and the levels", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(withEnv({ HOOKRELAY_LOG_LEVEL: "verbose" })(logLevelConfig))
      expect(text(error)).toContain("HOOKRELAY_LOG_LEVEL")
      expect(text(error)).toContain("must be one of trace, debug, info, warning, error, fatal, none")
    }))
})

describe("telemetry configuration (the standard OpenTelemetry variables)", () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }

  it.effect("is off without an OTLP endpoint, or when the SDK or every signal is disabled", () =>
    Effect.gen(function*() {
      for (
        const env of [
          {},
          { OTEL_SERVICE_NAME: "x" },
          { ...endpoint, OTEL_SDK_DISABLED: "true" },
          { ...endpoint, OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none", OTEL_LOGS_EXPORTER: "none" }
        ]
      ) expect(yield* withEnv(env)(telemetryConfig), JSON.stringify(env)).toStrictEqual(Option.none())
    }))

  const target = (url: string) => ({
    url,
    headers: {},
    timeout: Duration.millis(10_000),
    compression: "none",
    protocol: "http/protobuf"
  })
  const settings = (env: Record<string, string>) =>
    Effect.map(withEnv(env)(telemetryConfig), Option.getOrThrowWith(() => new Error("telemetry is off")))

  it.effect("exports traces, metrics and logs to the common endpoint, each signal to its own, under the service's name", () =>
    Effect.gen(function*() {
      expect(yield* settings(endpoint)).toStrictEqual({
        traces: target("http://collector:4318/v1/traces"),
        metrics: target("http://collector:4318/v1/metrics"),
        logs: target("http://collector:4318/v1/logs"),
        metricInterval: Duration.seconds(60),
        serviceName: "hookrelay",
        sampler: { parentBased: true, root: "always" },
        spanBatches: { scheduleDelay: Duration.millis(5_000), maxBatchSize: 2_048, maxQueueSize: 65_536 }
      })
      expect(
        yield* settings({
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example/custom/traces",
          OTEL_SERVICE_NAME: "relay-eu",
          OTEL_METRIC_EXPORT_INTERVAL: "5000"
        })
      ).toMatchObject({
        traces: target("https://collector.example/custom/traces"),
        metrics: undefined,
        logs: undefined,
        metricInterval: Duration.seconds(5),
        serviceName: "relay-eu"
      })
      expect(yield* settings({ ...endpoint, OTEL_TRACES_EXPORTER: "none" })).toMatchObject({
        traces: undefined,
        metrics: target("http://collector:4318/v1/metrics")
      })
      expect(yield* settings({ ...endpoint, OTEL_LOGS_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" })).toMatchObject(
        {
          traces: target("http://collector:4318/v1/traces"),
          metrics: undefined,
          logs: undefined
        }
      )
      // A trailing slash is not doubled; an empty variable is unset.
      expect(yield* settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/", OTEL_SERVICE_NAME: "" }))
        .toMatchObject({ traces: { url: "http://collector:4318/v1/traces" }, serviceName: "hookrelay" })
      expect(yield* withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "" })(telemetryConfig)).toStrictEqual(Option.none())
      expect(
        yield* settings({ ...endpoint, OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=eu,service.name=relay%20b" })
      )
        .toMatchObject({ serviceName: "relay b" })
    }))

  it.effect("reads headers, timeout, compression and protocol, a signal's own variable winning over the common one", () =>
    Effect.gen(function*() {
      const options = yield* settings({
        ...endpoint,
        OTEL_EXPORTER_OTLP_HEADERS: "x-tenant=eu, Authorization=Bearer%20abc",
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-tenant=metrics",
        OTEL_EXPORTER_OTLP_TIMEOUT: "2500",
        OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: "800",
        OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
        OTEL_EXPORTER_OTLP_METRICS_COMPRESSION: "none",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json"
      })
      expect(options.traces).toStrictEqual({
        url: "http://collector:4318/v1/traces",
        headers: { "x-tenant": "eu", authorization: "Bearer abc" },
        timeout: Duration.millis(800),
        compression: "gzip",
        protocol: "http/json"
      })
      expect(options.metrics).toStrictEqual({
        url: "http://collector:4318/v1/metrics",
        headers: { "x-tenant": "metrics", authorization: "Bearer abc" },
        timeout: Duration.millis(2500),
        compression: "none",
        protocol: "http/protobuf"
      })
    }))

  it.effect("reads the sampler and the span batches", () =>
    Effect.gen(function*() {
      expect(
        yield* settings({
          ...endpoint,
          OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
          OTEL_TRACES_SAMPLER_ARG: "0.25",
          OTEL_BSP_SCHEDULE_DELAY: "1000",
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "512",
          OTEL_BSP_MAX_QUEUE_SIZE: "2048"
        })
      ).toMatchObject({
        sampler: { parentBased: true, root: 0.25 },
        spanBatches: { scheduleDelay: Duration.millis(1000), maxBatchSize: 512, maxQueueSize: 2048 }
      })
      expect(yield* settings({ ...endpoint, OTEL_TRACES_SAMPLER: "always_off" })).toMatchObject({
        sampler: { parentBased: false, root: "never" }
      })
      expect(yield* settings({ ...endpoint, OTEL_TRACES_SAMPLER: "traceidratio" })).toMatchObject({
        sampler: { parentBased: false, root: 1 }
      })
    }))

  it.effect("refuses what it cannot export, naming the variable", () =>
    Effect.gen(function*() {
      for (
        const [name, value] of [
          ["OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"],
          ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"],
          ["OTEL_TRACES_EXPORTER", "zipkin"],
          ["OTEL_LOGS_EXPORTER", "console"],
          ["OTEL_METRIC_EXPORT_INTERVAL", "0"],
          ["OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "collector:4318"],
          ["OTEL_EXPORTER_OTLP_HEADERS", "x-tenant"],
          ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "=value"],
          ["OTEL_EXPORTER_OTLP_TIMEOUT", "soon"],
          ["OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"],
          ["OTEL_TRACES_SAMPLER", "jaeger_remote"],
          ["OTEL_TRACES_SAMPLER_ARG", "1.5"],
          ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "0"]
        ] as const
      ) {
        const error = yield* Effect.flip(withEnv({ ...endpoint, [name]: value })(telemetryConfig))
        expect(text(error)).toContain(name)
      }
    }))
})
