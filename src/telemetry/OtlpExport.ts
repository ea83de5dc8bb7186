import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Duration, Effect, Layer } from "effect"
import { createRequire } from "node:module"
import { DeliveryTracing } from "../delivery/DeliveryTracing.js"
import { makeDeliverySpans } from "./DeliverySpans.js"
import type { TelemetryOptions } from "./TelemetryConfig.js"

// The package root from src/telemetry (tsx) and dist/telemetry (the installed package) alike.
const { version } = createRequire(import.meta.url)("../../package.json") as { readonly version: string }

/**
 * The OpenTelemetry SDK exporting over OTLP/HTTP (JSON): spans in batches (`OTEL_BSP_*`), the Effect metrics
 * (`metrics/Metrics`, the ones `/metrics` serves) every `OTEL_METRIC_EXPORT_INTERVAL`. It sets the tracer every span
 * of the layers it is provided to uses, and provides delivery's spans. On shutdown it flushes what it holds.
 * Loaded only when telemetry is on (`Telemetry.layer`).
 */
export const layer = (options: TelemetryOptions): Layer.Layer<never> => {
  const sdk = NodeSdk.layer(() => ({
    resource: { serviceName: options.serviceName, serviceVersion: version },
    spanProcessor: options.traces ? new BatchSpanProcessor(new OTLPTraceExporter()) : undefined,
    metricReader: options.metrics
      ? new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter(),
        exportIntervalMillis: Duration.toMillis(options.metricInterval)
      })
      : undefined,
    shutdownTimeout: Duration.seconds(5)
  }))
  const delivery = options.traces
    ? Layer.effect(
      DeliveryTracing,
      Effect.zipWith(Effect.tracer, Effect.clock, (tracer, clock) => makeDeliverySpans(tracer, clock))
    )
    : Layer.empty
  // Typed as providing nothing: `DeliveryTracing` is an optional service (the dispatcher looks it up if present).
  return delivery.pipe(Layer.provideMerge(sdk))
}
