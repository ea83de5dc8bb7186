import { Config, Duration, Option, Schema } from "effect"

/**
 * A variable holding one of `names` (in any case), `fallback` when unset. A wrong value fails the start with
 * `Invalid data at NAME: "must be one of …"`: one line, where Schema's own message is a tree of every alternative.
 */
export const oneOfConfig = <const Names extends ReadonlyArray<string>>(
  name: string,
  names: Names,
  fallback: Names[number]
): Config.Config<Names[number]> => {
  const isName = Schema.is(Schema.Literal(...names))
  // Validated before it is nested under its name, so that the error says which variable it is.
  const value = Config.string().pipe(
    Config.map((value) => value.trim().toLowerCase()),
    Config.validate({ message: `must be one of ${names.join(", ")}`, validation: isName })
  )
  return Config.nested(value, name).pipe(Config.withDefault(fallback))
}

/**
 * What the standard OpenTelemetry variables ask for (https://opentelemetry.io/docs/specs/otel/configuration/
 * sdk-environment-variables/). Telemetry is on when an OTLP endpoint is set; the exporters read the endpoints,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT` and `…_COMPRESSION` themselves, and the resource `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES`.
 */
export interface TelemetryOptions {
  readonly traces: boolean
  readonly metrics: boolean
  /** `OTEL_METRIC_EXPORT_INTERVAL` (default 60 s). */
  readonly metricInterval: Duration.Duration
  /** `OTEL_SERVICE_NAME`, else `hookrelay`. */
  readonly serviceName: string
}

/** Whether a variable is set to something (set but empty is unset, for the SDK as for us). */
export const isSet = (name: string) => Config.option(Config.nonEmptyString(name)).pipe(Config.map(Option.isSome))

// `none` turns one signal off; any other exporter than OTLP is not shipped.
const exporter = (name: string) => oneOfConfig(name, ["otlp", "none"], "otlp")

// OTLP/HTTP with JSON bodies: collectors take JSON and protobuf on the same port and paths; gRPC is another port.
const protocol = (name: string) => oneOfConfig(name, ["http/json", "http/protobuf"], "http/json")

/** The telemetry to export, or none (`Option.none()`: telemetry off, nothing loaded). */
export const telemetryConfig: Config.Config<Option.Option<TelemetryOptions>> = Config.all({
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  endpoint: isSet("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesEndpoint: isSet("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  metricsEndpoint: isSet("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
  tracesExporter: exporter("OTEL_TRACES_EXPORTER"),
  metricsExporter: exporter("OTEL_METRICS_EXPORTER"),
  protocols: Config.all([
    protocol("OTEL_EXPORTER_OTLP_PROTOCOL"),
    protocol("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    protocol("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")
  ]),
  metricInterval: Config.integer("OTEL_METRIC_EXPORT_INTERVAL").pipe(
    Config.validate({ message: "must be a number of milliseconds of at least 1", validation: (ms) => ms >= 1 }),
    Config.withDefault(60_000)
  ),
  serviceName: Config.nonEmptyString("OTEL_SERVICE_NAME").pipe(Config.withDefault("hookrelay"))
}).pipe(Config.map((env) => {
  const traces = !env.disabled && env.tracesExporter === "otlp" && (env.endpoint || env.tracesEndpoint)
  const metrics = !env.disabled && env.metricsExporter === "otlp" && (env.endpoint || env.metricsEndpoint)
  return traces || metrics
    ? Option.some({
      traces,
      metrics,
      metricInterval: Duration.millis(env.metricInterval),
      serviceName: env.serviceName
    })
    : Option.none()
}))
