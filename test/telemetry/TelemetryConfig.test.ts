import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Duration, Effect, LogLevel, Option } from "effect"
import type { ConfigError } from "effect"
import { logLevelConfig } from "../../src/telemetry/LogLevel.js"
import { telemetryConfig } from "../../src/telemetry/TelemetryConfig.js"

const text = (error: ConfigError.ConfigError) => Cause.pretty(Cause.fail(error))

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("HOOKRELAY_LOG_LEVEL", () => {
  it.effect("defaults to info, and takes a level's name in any case", () =>
    Effect.gen(function*() {
      expect(yield* withEnv({})(logLevelConfig)).toBe(LogLevel.Info)
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "debug" })(logLevelConfig)).toBe(LogLevel.Debug)
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "Warning" })(logLevelConfig)).toBe(LogLevel.Warning)
      expect(yield* withEnv({ HOOKRELAY_LOG_LEVEL: "NONE" })(logLevelConfig)).toBe(LogLevel.None)
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

  it.effect("is off without an OTLP endpoint, or when the SDK or both signals are disabled", () =>
    Effect.gen(function*() {
      for (
        const env of [
          {},
          { OTEL_SERVICE_NAME: "x" },
          { ...endpoint, OTEL_SDK_DISABLED: "true" },
          { ...endpoint, OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none" }
        ]
      ) expect(yield* withEnv(env)(telemetryConfig), JSON.stringify(env)).toStrictEqual(Option.none())
    }))

  it.effect("exports traces and metrics to the common endpoint, each signal to its own, under the service's name", () =>
    Effect.gen(function*() {
      expect(yield* withEnv(endpoint)(telemetryConfig)).toStrictEqual(
        Option.some({ traces: true, metrics: true, metricInterval: Duration.seconds(60), serviceName: "hookrelay" })
      )
      expect(
        yield* withEnv({
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces",
          OTEL_SERVICE_NAME: "relay-eu",
          OTEL_METRIC_EXPORT_INTERVAL: "5000"
        })(telemetryConfig)
      ).toStrictEqual(
        Option.some({ traces: true, metrics: false, metricInterval: Duration.seconds(5), serviceName: "relay-eu" })
      )
      expect(yield* withEnv({ ...endpoint, OTEL_TRACES_EXPORTER: "none" })(telemetryConfig)).toMatchObject(
        Option.some({ traces: false, metrics: true })
      )
    }))

  it.effect("refuses what it cannot export, naming the variable", () =>
    Effect.gen(function*() {
      for (
        const [name, value] of [
          ["OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"],
          ["OTEL_TRACES_EXPORTER", "zipkin"],
          ["OTEL_METRIC_EXPORT_INTERVAL", "0"]
        ] as const
      ) {
        const error = yield* Effect.flip(withEnv({ ...endpoint, [name]: value })(telemetryConfig))
        expect(text(error)).toContain(name)
      }
    }))
})
