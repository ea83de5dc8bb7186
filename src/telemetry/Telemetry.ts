import { Effect, Layer, Option } from "effect"
import type { TelemetryOptions } from "./TelemetryConfig.js"

/**
 * Telemetry as the configuration asks: with none, the empty layer (no exporter is loaded, the tracking API and the
 * dispatcher make no span); with some, Effect's OTLP exporters (`OtlpExport`), imported now.
 */
export const layer = (options: Option.Option<TelemetryOptions>): Layer.Layer<never> =>
  Option.match(options, {
    onNone: () => Layer.empty,
    onSome: (telemetry) =>
      Layer.unwrap(Effect.map(Effect.promise(() => import("./OtlpExport.js")), (module) => module.layer(telemetry)))
  })

/** Whether the tracking API traces its requests (a server span each, parent of the jobs' attempts). */
export const tracesRequests = (options: Option.Option<TelemetryOptions>): boolean =>
  Option.exists(options, (telemetry) => telemetry.traces !== undefined)
