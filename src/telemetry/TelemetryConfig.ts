import { Config, Duration, Option } from "effect"
import { atLeastOne, oneOfConfig } from "./ConfigChoices.js"
import { type OtlpTarget, otlpTarget } from "./OtlpTarget.js"
import { type Sampler, samplerConfig } from "./Sampler.js"

/**
 * What the standard OpenTelemetry variables ask for (https://opentelemetry.io/docs/specs/otel/configuration/
 * sdk-environment-variables/). Telemetry is on when an OTLP endpoint is set for a signal that is not turned off.
 */
export interface TelemetryOptions {
  /** Where spans go; none when traces are off. */
  readonly traces: OtlpTarget | undefined
  /** Where the Effect metrics (the ones `/metrics` serves) go; none when metrics are off. */
  readonly metrics: OtlpTarget | undefined
  /** Where the server's log lines go as well as to stdout; none when logs are off. */
  readonly logs: OtlpTarget | undefined
  /** `OTEL_METRIC_EXPORT_INTERVAL` (default 60 s). */
  readonly metricInterval: Duration.Duration
  /** `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `hookrelay`. */
  readonly serviceName: string
  readonly sampler: Sampler
  readonly spanBatches: SpanBatches
}

/**
 * How spans are sent (`OTEL_BSP_*`): every `scheduleDelay`, or as soon as `maxBatchSize` are waiting; the exports in
 * flight hold at most `maxQueueSize` spans, one beyond failing (and so dropped). The defaults are larger than the
 * specification's 512 and 2 048: those are a fraction of a second of attempts at full rate.
 */
export interface SpanBatches {
  readonly scheduleDelay: Duration.Duration
  readonly maxBatchSize: number
  readonly maxQueueSize: number
}

const spanBatches: Config.Config<SpanBatches> = Config.all({
  scheduleDelay: Config.map(Config.withDefault(atLeastOne("OTEL_BSP_SCHEDULE_DELAY"), 5_000), Duration.millis),
  maxBatchSize: Config.withDefault(atLeastOne("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), 2_048),
  maxQueueSize: Config.withDefault(atLeastOne("OTEL_BSP_MAX_QUEUE_SIZE"), 65_536)
})

/** `service.name` among the resource attributes (`key=value,…`), percent-decoded. */
const resourceServiceName = (attributes: string): string | undefined => {
  const part = attributes.split(",").map((part) => part.trim()).find((part) => part.startsWith("service.name="))
  const name = part === undefined ? "" : decodeURIComponent(part.slice("service.name=".length).trim())
  return name === "" ? undefined : name
}

// `none` turns one signal off; any other exporter than OTLP is not shipped.
const exporter = (name: string) => oneOfConfig(name, ["otlp", "none"], "otlp")

const serviceName = Config.option(Config.NonEmptyString("OTEL_SERVICE_NAME")).pipe(
  Config.flatMap(Option.match({
    onSome: (name) => Config.succeed<string | undefined>(name),
    onNone: () =>
      Config.withDefault(Config.map(Config.String("OTEL_RESOURCE_ATTRIBUTES"), resourceServiceName), undefined)
  })),
  Config.map((name) => name ?? "hookrelay")
)

/** The telemetry to export, or none (`Option.none()`: telemetry off, nothing loaded). */
export const telemetryConfig: Config.Config<Option.Option<TelemetryOptions>> = Config.all({
  disabled: Config.withDefault(Config.Boolean("OTEL_SDK_DISABLED"), false),
  tracesExporter: exporter("OTEL_TRACES_EXPORTER"),
  metricsExporter: exporter("OTEL_METRICS_EXPORTER"),
  logsExporter: exporter("OTEL_LOGS_EXPORTER"),
  traces: otlpTarget("traces"),
  metrics: otlpTarget("metrics"),
  logs: otlpTarget("logs"),
  metricInterval: Config.withDefault(atLeastOne("OTEL_METRIC_EXPORT_INTERVAL"), 60_000),
  serviceName,
  sampler: samplerConfig,
  spanBatches
}).pipe(Config.map((env) => {
  const on = (exporter: "otlp" | "none", target: OtlpTarget | undefined) =>
    !env.disabled && exporter === "otlp" ? target : undefined
  const traces = on(env.tracesExporter, env.traces)
  const metrics = on(env.metricsExporter, env.metrics)
  const logs = on(env.logsExporter, env.logs)
  return traces !== undefined || metrics !== undefined || logs !== undefined
    ? Option.some({
      traces,
      metrics,
      logs,
      metricInterval: Duration.millis(env.metricInterval),
      serviceName: env.serviceName,
      sampler: env.sampler,
      spanBatches: env.spanBatches
    })
    : Option.none()
}))
