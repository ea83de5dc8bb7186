import { Config, Duration, Option } from "effect"
import { oneOfConfig } from "./ConfigChoices.js"
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
  /** `OTEL_METRIC_EXPORT_INTERVAL` (default 60 s). */
  readonly metricInterval: Duration.Duration
  /** `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES`, else `hookrelay`. */
  readonly serviceName: string
  readonly sampler: Sampler
  readonly spanBatches: SpanBatches
}

/**
 * How spans are sent (`OTEL_BSP_*`): every `scheduleDelay`, or as soon as `maxBatchSize` are waiting; at most
 * `maxQueueSize` spans held (the open batch's and those of exports not over), newer ones dropped beyond that. The defaults are larger than the specification's 512 and 2 048: those
 * are a fraction of a second of attempts at full rate.
 */
export interface SpanBatches {
  readonly scheduleDelay: Duration.Duration
  readonly maxBatchSize: number
  readonly maxQueueSize: number
}

const atLeastOne = (name: string, fallback: number) =>
  Config.nested(
    Config.integer().pipe(
      Config.validate({ message: "must be a whole number of at least 1", validation: (n) => n >= 1 })
    ),
    name
  ).pipe(Config.withDefault(fallback))

const spanBatches: Config.Config<SpanBatches> = Config.all({
  scheduleDelay: Config.map(atLeastOne("OTEL_BSP_SCHEDULE_DELAY", 5_000), Duration.millis),
  maxBatchSize: atLeastOne("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 2_048),
  maxQueueSize: atLeastOne("OTEL_BSP_MAX_QUEUE_SIZE", 65_536)
})

/** `service.name` among the resource attributes (`key=value,…`), percent-decoded. */
const resourceServiceName = (attributes: string): string | undefined => {
  const part = attributes.split(",").map((part) => part.trim()).find((part) => part.startsWith("service.name="))
  const name = part === undefined ? "" : decodeURIComponent(part.slice("service.name=".length).trim())
  return name === "" ? undefined : name
}

// `none` turns one signal off; any other exporter than OTLP is not shipped.
const exporter = (name: string) => oneOfConfig(name, ["otlp", "none"], "otlp")

/** The telemetry to export, or none (`Option.none()`: telemetry off, nothing loaded). */
export const telemetryConfig: Config.Config<Option.Option<TelemetryOptions>> = Config.all({
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  tracesExporter: exporter("OTEL_TRACES_EXPORTER"),
  metricsExporter: exporter("OTEL_METRICS_EXPORTER"),
  traces: otlpTarget("traces"),
  metrics: otlpTarget("metrics"),
  metricInterval: atLeastOne("OTEL_METRIC_EXPORT_INTERVAL", 60_000),
  serviceName: Config.nonEmptyString("OTEL_SERVICE_NAME").pipe(
    Config.orElse(() => Config.map(Config.string("OTEL_RESOURCE_ATTRIBUTES"), resourceServiceName)),
    Config.map((name) => name ?? "hookrelay"),
    Config.withDefault("hookrelay")
  ),
  sampler: samplerConfig,
  spanBatches
}).pipe(Config.map((env) => {
  const traces = !env.disabled && env.tracesExporter === "otlp" ? env.traces : undefined
  const metrics = !env.disabled && env.metricsExporter === "otlp" ? env.metrics : undefined
  return traces !== undefined || metrics !== undefined
    ? Option.some({
      traces,
      metrics,
      metricInterval: Duration.millis(env.metricInterval),
      serviceName: env.serviceName,
      sampler: env.sampler,
      spanBatches: env.spanBatches
    })
    : Option.none()
}))
