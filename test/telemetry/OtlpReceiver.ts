import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { gunzipSync } from "node:zlib"
import { decodeMetrics, decodeTraces } from "./OtlpProtobuf.js"

/** A span in OTLP's JSON mapping (ids in hex), with its resource's service name. */
export interface ReceivedSpan {
  readonly service: string | undefined
  /** The attributes of the span's resource. */
  readonly resource: Record<string, unknown>
  readonly name: string
  readonly kind: number
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes: Record<string, unknown>
  readonly status: number | undefined
  /** The span as decoded (protobuf, by OpenTelemetry's decoder) or parsed (JSON). */
  readonly raw: OtlpSpan
}

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
export interface OtlpSpan {
  readonly name: string
  readonly kind: number
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly startTimeUnixNano?: string
  readonly endTimeUnixNano?: string
  readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes?: ReadonlyArray<KeyValue>
  readonly events?: ReadonlyArray<{ readonly name: string; readonly attributes?: ReadonlyArray<KeyValue> }>
  readonly status?: { readonly code?: number; readonly message?: string }
}
interface TraceRequest {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans?: ReadonlyArray<{ readonly spans?: ReadonlyArray<OtlpSpan> }>
  }>
}
interface MetricsRequest {
  readonly resourceMetrics?: ReadonlyArray<{
    readonly scopeMetrics?: ReadonlyArray<{ readonly metrics?: ReadonlyArray<{ readonly name: string }> }>
  }>
}
interface LogsRequest {
  readonly resourceLogs?: ReadonlyArray<{
    readonly scopeLogs?: ReadonlyArray<{ readonly logRecords?: ReadonlyArray<{ readonly body?: AnyValue }> }>
  }>
}

const valueOf = (value: AnyValue): unknown =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ??
    value.boolValue

export const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]))

/**
 * An OTLP/HTTP collector on loopback: decodes the bodies (protobuf or JSON, gzipped or not) OTLP/HTTP exporters post to
 * `/v1/traces`, `/v1/metrics` and `/v1/logs`, keeping the spans (also by export), the metric names and the log lines
 * (of JSON bodies only), and the headers of every request. `answer` says how it answers a request (the first is 1): a status, or none at all.
 */
export interface OtlpReceiver {
  readonly url: string
  readonly spans: Array<ReceivedSpan>
  /** The spans of each traces export, in the order they came. */
  readonly exports: Array<ReadonlyArray<ReceivedSpan>>
  readonly metricNames: Set<string>
  readonly logs: Array<unknown>
  readonly headers: Array<IncomingHttpHeaders>
  readonly close: () => Promise<void>
}

export const startOtlpReceiver = (
  options: { readonly answer?: (request: number) => number | "never" } = {}
): Promise<OtlpReceiver> =>
  new Promise((resolve, reject) => {
    const spans: Array<ReceivedSpan> = []
    const exports: Array<ReadonlyArray<ReceivedSpan>> = []
    const metricNames = new Set<string>()
    const logs: Array<unknown> = []
    const headers: Array<IncomingHttpHeaders> = []
    const server: Server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        headers.push(request.headers)
        const answer = options.answer?.(headers.length) ?? 200
        if (answer === "never") return
        const raw = Buffer.concat(chunks)
        const bytes = request.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw
        const protobuf = request.headers["content-type"] === "application/x-protobuf"
        // OpenTelemetry's generated code has no logs messages: protobuf log bodies are taken, not read.
        const decode = request.url === "/v1/traces"
          ? decodeTraces
          : request.url === "/v1/logs"
          ? () => ({})
          : decodeMetrics
        const body = (protobuf ? decode(bytes) : JSON.parse(bytes.toString("utf8"))) as
          & TraceRequest
          & MetricsRequest
          & LogsRequest
        if (answer === 200 && request.url === "/v1/traces") {
          const received: Array<ReceivedSpan> = []
          for (const resourceSpans of body.resourceSpans ?? []) {
            const resource = attributesOf(resourceSpans.resource?.attributes)
            for (const scope of resourceSpans.scopeSpans ?? []) {
              for (const span of scope.spans ?? []) {
                received.push({
                  service: resource["service.name"] as string | undefined,
                  resource,
                  name: span.name,
                  kind: span.kind,
                  traceId: span.traceId,
                  spanId: span.spanId,
                  parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
                  links: span.links ?? [],
                  attributes: attributesOf(span.attributes),
                  status: span.status?.code,
                  raw: span
                })
              }
            }
          }
          spans.push(...received)
          exports.push(received)
        } else if (answer === 200 && request.url === "/v1/metrics") {
          for (const resource of body.resourceMetrics ?? []) {
            for (const scope of resource.scopeMetrics ?? []) {
              for (const metric of scope.metrics ?? []) metricNames.add(metric.name)
            }
          }
        } else if (answer === 200 && request.url === "/v1/logs") {
          for (const resource of body.resourceLogs ?? []) {
            for (const scope of resource.scopeLogs ?? []) {
              for (const record of scope.logRecords ?? []) logs.push(record.body && valueOf(record.body))
            }
          }
        }
        // An empty `Export…ServiceResponse` either way.
        if (protobuf) response.writeHead(answer, { "content-type": "application/x-protobuf" }).end()
        else response.writeHead(answer, { "content-type": "application/json" }).end("{}")
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans,
        exports,
        metricNames,
        logs,
        headers,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      }))
  })
