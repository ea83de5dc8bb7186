import { Clock, Duration, Effect, Layer, Tracer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError } from "effect/http"
import { OtlpExporter, OtlpLogger, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import { createRequire } from "node:module"
import { DeliveryTracing } from "../delivery/DeliveryTracing.js"
import { makeFailureRun } from "../runtime/FailureRun.js"
import { makeDeliverySpans } from "./DeliverySpans.js"
import type { OtlpTarget } from "./OtlpTarget.js"
import { withSampler } from "./Sampler.js"
import type { TelemetryOptions } from "./TelemetryConfig.js"

// The package root from src/telemetry (tsx) and dist/telemetry (the installed package) alike.
const { version } = createRequire(import.meta.url)("../../package.json") as { readonly version: string }

const shutdownTimeout = Duration.seconds(5)

/**
 * The HTTP client one signal's exporter posts with: what the library's exporter does not read of the standard
 * variables. An export is given up after `OTEL_EXPORTER_OTLP_TIMEOUT` (a collector that does not answer must not hold
 * exports forever), and at most `maxInFlight` exports run at once: one beyond them fails at once as a transport error
 * (the exporter retries it, then drops it), so a stuck collector holds a bounded number of spans. The library logs
 * failures at debug only: a run of them is one warning here, and one line when exports work again.
 */
export const exportClient = (target: OtlpTarget, maxInFlight: number) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const failures = yield* makeFailureRun(`exporting to ${target.url} (dropped while it fails)`)
    let inFlight = 0
    const fail = (request: HttpClientError.TransportError["request"], description: string) =>
      Effect.fail(
        new HttpClientError.HttpClientError({ reason: new HttpClientError.TransportError({ request, description }) })
      )
    return HttpClient.transform(client, (response, request) =>
      Effect.suspend(() => {
        if (inFlight >= maxInFlight) return fail(request, `${maxInFlight} exports are in flight already`)
        inFlight += 1
        return response.pipe(
          Effect.timeoutOrElse({
            duration: target.timeout,
            orElse: () => fail(request, `no answer within ${Duration.format(target.timeout)}`)
          }),
          Effect.ensuring(Effect.sync(() => inFlight -= 1))
        )
      }).pipe(
        Effect.tap((answer) => answer.status < 300 ? failures.succeeded : failures.failed(`HTTP ${answer.status}`)),
        Effect.tapError((error) => failures.failed(error.message))
      ))
  })

/** What one signal's exporter needs: its HTTP client, its body format, and the flusher all exporters share. */
const transport = (target: OtlpTarget, maxInFlight: number) =>
  Layer.mergeAll(
    Layer.effect(HttpClient.HttpClient, exportClient(target, maxInFlight)).pipe(Layer.provide(FetchHttpClient.layer)),
    target.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson,
    OtlpExporter.layerFlusher
  )

const common = (options: TelemetryOptions, target: OtlpTarget) => ({
  url: target.url,
  resource: { serviceName: options.serviceName, serviceVersion: version },
  // The library adds its own exporter's name after it.
  headers: { ...target.headers, "user-agent": `hookrelay/${version}` },
  compression: target.compression,
  shutdownTimeout
})

/**
 * Spans: Effect's OTLP tracer, behind the sampler, as the tracer of every span of the layers this is provided to, and
 * delivery's spans (`DeliveryTracing`) made on it.
 */
const traces = (options: TelemetryOptions, target: OtlpTarget) => {
  const { maxBatchSize, maxQueueSize, scheduleDelay } = options.spanBatches
  return Layer.unwrap(Effect.gen(function*() {
    const otlp = yield* OtlpTracer.make({ ...common(options, target), exportInterval: scheduleDelay, maxBatchSize })
    const tracer = withSampler(otlp, options.sampler)
    const clock = yield* Clock.Clock
    return Layer.merge(
      Layer.succeed(Tracer.Tracer, tracer),
      Layer.succeed(DeliveryTracing, makeDeliverySpans(tracer, clock))
    )
  })).pipe(Layer.provide(transport(target, Math.max(1, Math.floor(maxQueueSize / maxBatchSize)))))
}

/** The Effect metrics (`metrics/Metrics`, the ones `/metrics` serves), every `OTEL_METRIC_EXPORT_INTERVAL`. */
const metrics = (options: TelemetryOptions, target: OtlpTarget) =>
  OtlpMetrics.layer({ ...common(options, target), exportInterval: options.metricInterval }).pipe(
    Layer.provide(transport(target, 1))
  )

/** The log lines, to the collector as well as to the logger already there (JSON on stdout). */
const logs = (options: TelemetryOptions, target: OtlpTarget) =>
  OtlpLogger.layer({ ...common(options, target), mergeWithExisting: true }).pipe(Layer.provide(transport(target, 4)))

/**
 * Telemetry over OTLP/HTTP as `options` asks, under the resource of `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES`. On shutdown it flushes what it holds. Loaded only when telemetry is on
 * (`Telemetry.layer`).
 */
export const layer = (options: TelemetryOptions): Layer.Layer<never> =>
  // Typed as providing nothing: `DeliveryTracing` is an optional service (the dispatcher looks it up if present).
  Layer.mergeAll(
    options.traces !== undefined ? traces(options, options.traces) : Layer.empty,
    options.metrics !== undefined ? metrics(options, options.metrics) : Layer.empty,
    options.logs !== undefined ? logs(options, options.logs) : Layer.empty
  )
