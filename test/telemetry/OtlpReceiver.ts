import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { gunzipSync } from "node:zlib"
import { decodeMetrics, decodeTraces } from "./OtlpProtobuf.js"

/** A span in OTLP's JSON mapping (ids in hex), with its resource's service name. */
export interface ReceivedSpan {
  readonly service: string | undefined
  readonly name: string
  readonly kind: number
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes: Record<string, unknown>
  readonly status: number | undefined
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
interface TraceRequest {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans?: ReadonlyArray<{
      readonly spans?: ReadonlyArray<{
        readonly name: string
        readonly kind: number
        readonly traceId: string
        readonly spanId: string
        readonly parentSpanId?: string
        readonly links?: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
        readonly attributes?: ReadonlyArray<KeyValue>
        readonly status?: { readonly code?: number }
      }>
    }>
  }>
}

const valueOf = (value: AnyValue): unknown =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ??
    value.boolValue

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]))

/**
 * An OTLP/HTTP collector on loopback: decodes the bodies (protobuf or JSON, gzipped or not) OTLP/HTTP exporters post to
 * `/v1/traces` and `/v1/metrics`, keeping the spans and the metric names, and the headers of every request.
 */
export interface OtlpReceiver {
  readonly url: string
  readonly spans: Array<ReceivedSpan>
  readonly metricNames: Set<string>
  readonly headers: Array<IncomingHttpHeaders>
  readonly close: () => Promise<void>
}

export const startOtlpReceiver = (): Promise<OtlpReceiver> =>
  new Promise((resolve, reject) => {
    const spans: Array<ReceivedSpan> = []
    const metricNames = new Set<string>()
    const headers: Array<IncomingHttpHeaders> = []
    const server: Server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        headers.push(request.headers)
        const raw = Buffer.concat(chunks)
        const bytes = request.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw
        const protobuf = request.headers["content-type"] === "application/x-protobuf"
        const body = (protobuf
          ? request.url === "/v1/traces" ? decodeTraces(bytes) : decodeMetrics(bytes)
          : JSON.parse(bytes.toString("utf8"))) as TraceRequest & {
            readonly resourceMetrics?: ReadonlyArray<{
              readonly scopeMetrics?: ReadonlyArray<{ readonly metrics?: ReadonlyArray<{ readonly name: string }> }>
            }>
          }
        if (request.url === "/v1/traces") {
          for (const resourceSpans of body.resourceSpans ?? []) {
            const service = attributesOf(resourceSpans.resource?.attributes)["service.name"] as string | undefined
            for (const scope of resourceSpans.scopeSpans ?? []) {
              for (const span of scope.spans ?? []) {
                spans.push({
                  service,
                  name: span.name,
                  kind: span.kind,
                  traceId: span.traceId,
                  spanId: span.spanId,
                  parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
                  links: span.links ?? [],
                  attributes: attributesOf(span.attributes),
                  status: span.status?.code
                })
              }
            }
          }
        } else if (request.url === "/v1/metrics") {
          for (const resource of body.resourceMetrics ?? []) {
            for (const scope of resource.scopeMetrics ?? []) {
              for (const metric of scope.metrics ?? []) metricNames.add(metric.name)
            }
          }
        }
        // An empty `Export…ServiceResponse` either way.
        if (protobuf) response.writeHead(200, { "content-type": "application/x-protobuf" }).end()
        else response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        spans,
        metricNames,
        headers,
        close: () => new Promise((done) => server.close(() => done()))
      }))
  })
