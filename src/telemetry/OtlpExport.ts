import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { HttpClient } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Duration, Effect, Layer } from "effect"
import { createRequire } from "node:module"
import { DeliveryTracing } from "../delivery/DeliveryTracing.js"
import { makeDeliverySpans } from "./DeliverySpans.js"
import { exportClient } from "./OtlpClient.js"
import type { OtlpTarget, Signal } from "./OtlpTarget.js"
import { withSampler } from "./Sampler.js"
import { makeSpanExporter } from "./SpanExporter.js"
import type { TelemetryOptions } from "./TelemetryConfig.js"

// The package root from src/telemetry (tsx) and dist/telemetry (the installed package) alike.
const { version } = createRequire(import.meta.url)("../../package.json") as { readonly version: string }

const shutdownTimeout = Duration.seconds(5)

/** What one signal's exporter needs: its HTTP client and its body format. */
const transport = (signal: Signal, target: OtlpTarget, maxInFlight: number) =>
  Layer.merge(
    Layer.effect(HttpClient.HttpClient, exportClient(signal, target, maxInFlight)).pipe(
      Layer.provide(NodeHttpClient.layerUndici)
    ),
    target.protocol === "http/protobuf" ? OtlpSerialization.layerProtobuf : OtlpSerialization.layerJson
  )

/**
 * Spans: the Effect tracer every span of the layers this is provided to uses (`SpanExporter`), behind the sampler,
 * and delivery's spans (`DeliveryTracing`): its batches' on that tracer, its attempts' to the same exporter under the
 * same sampler.
 */
const traces = (options: TelemetryOptions, target: OtlpTarget) =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const exporter = yield* makeSpanExporter({
        url: target.url,
        headers: target.headers,
        protocol: target.protocol,
        serviceName: options.serviceName,
        serviceVersion: version,
        batches: options.spanBatches,
        shutdownTimeout
      })
      // eslint-disable-next-line @typescript-eslint/unbound-method -- Effect's own tracer's `context` uses no `this`
      const { context } = yield* Effect.tracer
      const tracer = withSampler(exporter.tracer, options.sampler, context)
      const deliverySpans = makeDeliverySpans({
        tracer,
        sampler: options.sampler,
        exportAttempt: exporter.exportAttempt,
        clock: yield* Effect.clock
      })
      return Layer.merge(Layer.setTracer(tracer), Layer.succeed(DeliveryTracing, deliverySpans))
    })
    // The exporter bounds the spans it holds and a batch holds one at least: this bound never refuses a span batch.
  ).pipe(Layer.provide(transport("traces", target, options.spanBatches.maxQueueSize)))

/** The Effect metrics (`metrics/Metrics`, the ones `/metrics` serves), every `OTEL_METRIC_EXPORT_INTERVAL`. */
const metrics = (options: TelemetryOptions, target: OtlpTarget) =>
  OtlpMetrics.layer({
    url: target.url,
    headers: target.headers,
    resource: { serviceName: options.serviceName, serviceVersion: version },
    exportInterval: options.metricInterval,
    shutdownTimeout
  }).pipe(Layer.provide(transport("metrics", target, 1)))

/**
 * Telemetry over OTLP/HTTP as `options` asks, under the resource of `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES`. On shutdown it flushes what it holds. Loaded only when telemetry is on
 * (`Telemetry.layer`).
 */
export const layer = (options: TelemetryOptions): Layer.Layer<never> =>
  // Typed as providing nothing: `DeliveryTracing` is an optional service (the dispatcher looks it up if present).
  Layer.merge(
    options.traces !== undefined ? traces(options, options.traces) : Layer.empty,
    options.metrics !== undefined ? metrics(options, options.metrics) : Layer.empty
  )
