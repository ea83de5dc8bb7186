import { createRequire } from "node:module"

/**
 * OTLP/protobuf bodies decoded by OpenTelemetry JS's code generated from opentelemetry-proto (protobufjs, in
 * `@opentelemetry/otlp-transformer`), not by anything of hookrelay's, into the OTLP/JSON mapping: ids in hex, 64-bit
 * integers as decimal strings, enums as numbers, fields left at their default omitted, repeated ones always present.
 */
interface GeneratedType {
  readonly decode: (bytes: Uint8Array) => unknown
  readonly toObject: (message: unknown, options: Record<string, unknown>) => Record<string, unknown>
}

const generated = createRequire(import.meta.url)(
  "@opentelemetry/otlp-transformer/build/src/generated/root.js"
) as {
  readonly opentelemetry: {
    readonly proto: {
      readonly collector: {
        readonly trace: { readonly v1: { readonly ExportTraceServiceRequest: GeneratedType } }
        readonly metrics: { readonly v1: { readonly ExportMetricsServiceRequest: GeneratedType } }
      }
    }
  }
}
const collector = generated.opentelemetry.proto.collector

const decoded = (type: GeneratedType, bytes: Uint8Array) =>
  type.toObject(type.decode(bytes), { longs: String, enums: Number, bytes: Array, arrays: true })

type Json = Record<string, unknown>
const hex = (bytes: unknown) => Buffer.from(bytes as Array<number>).toString("hex")
const list = (value: unknown) => value as Array<Json>

/** The ids of a span or link, which protobuf carries as bytes, in hex as the JSON mapping writes them. */
const withHexIds = (message: Json): Json => {
  const ids: Json = { traceId: hex(message.traceId), spanId: hex(message.spanId) }
  const parent = message.parentSpanId as Array<number> | undefined
  if (parent !== undefined && parent.length > 0) ids.parentSpanId = hex(parent)
  else delete message.parentSpanId
  return Object.assign(message, ids, message.links === undefined ? {} : { links: list(message.links).map(withHexIds) })
}

/** An `ExportTraceServiceRequest` (`/v1/traces`). */
export const decodeTraces = (bytes: Uint8Array): Json => {
  const request = decoded(collector.trace.v1.ExportTraceServiceRequest, bytes)
  for (const resourceSpans of list(request.resourceSpans)) {
    for (const scopeSpans of list(resourceSpans.scopeSpans)) list(scopeSpans.spans).forEach(withHexIds)
  }
  return request
}

/** An `ExportMetricsServiceRequest` (`/v1/metrics`). */
export const decodeMetrics = (bytes: Uint8Array): Json =>
  decoded(collector.metrics.v1.ExportMetricsServiceRequest, bytes)
