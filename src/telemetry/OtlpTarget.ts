import { Config, Duration, Option, Schema } from "effect"
import { checked, oneOf } from "./ConfigChoices.js"

/**
 * Where and how one signal (traces, metrics or logs) is posted over OTLP/HTTP, from the standard variables
 * (https://opentelemetry.io/docs/specs/otel/protocol/exporter/): each `OTEL_EXPORTER_OTLP_*` variable has a per-signal
 * twin (`OTEL_EXPORTER_OTLP_TRACES_*`) that wins over it.
 */
export interface OtlpTarget {
  /** The signal's own endpoint as given, or the common one with `/v1/traces`, `/v1/metrics` or `/v1/logs` appended. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** How long one export may take (default 10 s). */
  readonly timeout: Duration.Duration
  readonly compression: "gzip" | "none"
  /** JSON or protobuf bodies, on the same port and paths; gRPC is another port and is not shipped. */
  readonly protocol: "http/json" | "http/protobuf"
}

export type Signal = "traces" | "metrics" | "logs"

const signalName = (name: string, signal: Signal) =>
  name.replace("OTEL_EXPORTER_OTLP_", `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_`)

/** The per-signal variable when it is set, else the common one, else `fallback`. */
const either = <A>(
  name: string,
  signal: Signal,
  read: (name: string) => Config.Config<A>,
  fallback: A
): Config.Config<A> =>
  Config.all([Config.option(read(signalName(name, signal))), Config.option(read(name))]).pipe(
    Config.map(([own, common]) => Option.getOrElse(Option.orElse(own, () => common), () => fallback))
  )

const isHttpUrl = (value: string) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)

/** An endpoint variable; set but empty (or blank) is unset, as the specification says of every variable. */
const endpoint = (name: string): Config.Config<Option.Option<string>> =>
  Config.option(
    checked(name, Schema.String, (url) => url.trim() === "" || isHttpUrl(url.trim()), "must be an http or https URL")
  ).pipe(Config.map((url) => Option.filter(Option.map(url, (value) => value.trim()), (value) => value !== "")))

/**
 * `key1=value1,key2=value2`, each part percent-encoded (the W3C Baggage format the specification names). A part
 * without `=` or with an empty key is refused: the start fails rather than send what the collector would reject.
 */
export const parseHeaders = (value: string): Record<string, string> | undefined => {
  const headers: Record<string, string> = {}
  for (const part of value.split(",")) {
    if (part.trim() === "") continue
    const equals = part.indexOf("=")
    if (equals <= 0) return undefined
    try {
      const key = decodeURIComponent(part.slice(0, equals).trim()).toLowerCase()
      if (key === "") return undefined
      headers[key] = decodeURIComponent(part.slice(equals + 1).trim())
    } catch {
      return undefined
    }
  }
  return headers
}

const headers = (name: string) =>
  checked(
    name,
    Schema.String,
    (value) => parseHeaders(value) !== undefined,
    "must be key=value pairs separated by commas"
  )
    .pipe(Config.map((value) => parseHeaders(value)!))

const timeout = (name: string) =>
  checked(
    name,
    Schema.NumberFromString,
    (ms) => Number.isInteger(ms) && ms >= 1,
    "must be a number of milliseconds of at least 1"
  )

/**
 * The signal's target, or none when neither its own endpoint nor the common one is set. The URL of the common
 * endpoint gets the signal's path appended (`/v1/traces`); a signal's own endpoint is used as it is.
 */
export const otlpTarget = (signal: Signal): Config.Config<OtlpTarget | undefined> =>
  Config.all({
    own: endpoint(signalName("OTEL_EXPORTER_OTLP_ENDPOINT", signal)),
    common: endpoint("OTEL_EXPORTER_OTLP_ENDPOINT"),
    // The common headers and the signal's own, which win where both name one.
    headers: Config.all([
      Config.withDefault(headers("OTEL_EXPORTER_OTLP_HEADERS"), {}),
      Config.withDefault(headers(signalName("OTEL_EXPORTER_OTLP_HEADERS", signal)), {})
    ]),
    timeout: either("OTEL_EXPORTER_OTLP_TIMEOUT", signal, timeout, 10_000),
    compression: either("OTEL_EXPORTER_OTLP_COMPRESSION", signal, (name) => oneOf(name, ["none", "gzip"]), "none"),
    protocol: either("OTEL_EXPORTER_OTLP_PROTOCOL", signal, (name) =>
      oneOf(name, ["http/json", "http/protobuf"]), "http/protobuf")
  }).pipe(Config.map((env): OtlpTarget | undefined => {
    const url = Option.isSome(env.own)
      ? env.own.value
      : Option.isSome(env.common)
      ? `${env.common.value.replace(/\/+$/, "")}/v1/${signal}`
      : undefined
    if (url === undefined) {
      return undefined
    }
    return {
      url,
      headers: { ...env.headers[0], ...env.headers[1] },
      timeout: Duration.millis(env.timeout),
      compression: env.compression,
      protocol: env.protocol
    }
  }))
