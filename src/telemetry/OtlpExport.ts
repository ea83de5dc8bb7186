import * as Metrics from "@effect/opentelemetry/Metrics"
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import * as Resource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Effect, Layer, Tracer } from "effect"
import { createRequire } from "node:module"
import { DeliveryTracing } from "../delivery/DeliveryTracing.js"
import { makeDeliverySpans } from "./DeliverySpans.js"
import { isSet, type TelemetryOptions } from "./TelemetryConfig.js"

// The package root from src/telemetry (tsx) and dist/telemetry (the installed package) alike.
const { version } = createRequire(import.meta.url)("../../package.json") as { readonly version: string }

const shutdownTimeout = Duration.seconds(5)

/**
 * The Effect tracer making OpenTelemetry spans, without the OpenTelemetry context around each fiber step: that
 * wrapper, run every time a fiber resumes, serves instrumentations reading the OpenTelemetry API's active context, and
 * none runs here (no context manager is registered; delivery's spans name their parent themselves).
 */
const effectTracer = Layer.unwrapEffect(
  Effect.map(
    OtelTracer.make,
    (otel) => Layer.setTracer(Tracer.make({ span: (...args) => otel.span(...args), context: (run) => run() }))
  )
)

/**
 * The span queue unless `OTEL_BSP_MAX_QUEUE_SIZE` / `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` say otherwise: the standard
 * 2 048 spans are a fraction of a second of attempts at full rate, and a full queue drops spans.
 */
const isSetVariable = (name: string) => Effect.orElseSucceed(isSet(name), () => false)
const spanQueue = Effect.map(
  Effect.all([isSetVariable("OTEL_BSP_MAX_QUEUE_SIZE"), isSetVariable("OTEL_BSP_MAX_EXPORT_BATCH_SIZE")]),
  ([queueSet, batchSet]) => ({
    ...(queueSet ? {} : { maxQueueSize: 65_536 }),
    ...(batchSet ? {} : { maxExportBatchSize: 2_048 })
  })
)

/**
 * Spans over OTLP/HTTP in batches (`OTEL_BSP_*`): the Effect tracer every span of the layers this is provided to uses,
 * and delivery's spans (`DeliveryTracing`) on the OpenTelemetry tracer under it.
 */
const traces = () =>
  Layer.effect(
    DeliveryTracing,
    Effect.map(
      Effect.all([OtelTracer.OtelTracer, Effect.tracer, Effect.clock]),
      ([otel, tracer, clock]) => makeDeliverySpans(otel, tracer, clock)
    )
  ).pipe(
    Layer.provideMerge(effectTracer.pipe(Layer.provideMerge(OtelTracer.layerTracer))),
    Layer.provide(Layer.unwrapEffect(Effect.map(spanQueue, (queue) =>
      NodeSdk.layerTracerProvider(new BatchSpanProcessor(new OTLPTraceExporter(), queue), { shutdownTimeout }))))
  )

/**
 * The OpenTelemetry SDK exporting over OTLP/HTTP (JSON): spans (`traces`) and the Effect metrics (`metrics/Metrics`,
 * the ones `/metrics` serves) every `OTEL_METRIC_EXPORT_INTERVAL`, as `options` asks, under the resource of
 * `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`. On shutdown it flushes what it holds. Loaded only when telemetry
 * is on (`Telemetry.layer`).
 */
export const layer = (options: TelemetryOptions): Layer.Layer<never> => {
  const metrics = options.metrics
    ? Metrics.layer(() =>
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(),
        exportIntervalMillis: Duration.toMillis(options.metricInterval)
      }), { shutdownTimeout })
    : Layer.empty
  const resource = Resource.layerFromEnv(
    Resource.configToAttributes({ serviceName: options.serviceName, serviceVersion: version })
  )
  // Typed as providing nothing: `DeliveryTracing` is an optional service (the dispatcher looks it up if present).
  return Layer.merge(options.traces ? traces() : Layer.empty, metrics).pipe(Layer.provide(resource))
}
