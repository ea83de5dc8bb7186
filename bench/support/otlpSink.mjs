/**
 * An OTLP/HTTP collector for the telemetry benchmark (`bench/telemetry.ts`): answers every POST to `/v1/traces`,
 * `/v1/metrics` and `/v1/logs` with 200 as soon as its body has arrived, and counts the spans (JSON or protobuf) when asked. The
 * bodies are decoded only then, after the measured phase, so that decoding them does not take the cores the server is
 * measured on: a real collector runs on a machine of its own. Plain JavaScript in a process of its own; sends its port
 * to its parent over IPC, answers `{ type: "stats" }` with its counts, and exits when the parent disconnects.
 */
/* global Buffer, process */
import { createServer } from "node:http"
import { gunzipSync } from "node:zlib"

let spans = 0
let requests = 0
let bytes = 0
/** Bodies not counted yet. */
let pending = []

/** The length-delimited fields numbered `field` of the protobuf message in `bytes`, as subarrays. */
const fields = (bytes, field) => {
  const found = []
  let at = 0
  const varint = () => {
    let value = 0
    for (let shift = 1;; shift *= 128) {
      const byte = bytes[at++]
      value += (byte & 0x7f) * shift
      if (byte < 0x80) return value
    }
  }
  while (at < bytes.length) {
    const tag = varint()
    const wireType = tag & 7
    if (wireType === 0) varint()
    else if (wireType === 1) at += 8
    else if (wireType === 5) at += 4
    else if (wireType === 2) {
      const length = varint()
      if (Math.floor(tag / 8) === field) found.push(bytes.subarray(at, at + length))
      at += length
    } else throw new Error(`wire type ${wireType}`)
  }
  return found
}

/** Spans of an `ExportTraceServiceRequest`: `resource_spans` (1), their `scope_spans` (2), their `spans` (2). */
const protobufSpans = (bytes) => {
  let count = 0
  for (const resource of fields(bytes, 1)) {
    for (const scope of fields(resource, 2)) count += fields(scope, 2).length
  }
  return count
}

const jsonSpans = (text) => {
  let count = 0
  for (const resource of JSON.parse(text).resourceSpans ?? []) {
    for (const scope of resource.scopeSpans ?? []) count += (scope.spans ?? []).length
  }
  return count
}

const count = () => {
  for (const { body, protobuf } of pending) {
    try {
      // `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`: a gzip stream starts with 0x1f 0x8b.
      const bytes = body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body
      spans += protobuf ? protobufSpans(bytes) : jsonSpans(bytes.toString("utf8"))
    } catch {
      // counted as a request, no spans
    }
  }
  pending = []
}

const server = createServer((request, response) => {
  const chunks = []
  request.on("data", (chunk) => chunks.push(chunk))
  request.on("end", () => {
    const body = Buffer.concat(chunks)
    requests += 1
    bytes += body.byteLength
    // Metrics and logs are not counted.
    if (request.url === "/v1/traces") {
      pending.push({ body, protobuf: request.headers["content-type"] === "application/x-protobuf" })
    }
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
server.keepAliveTimeout = 30_000
server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  process.send?.({ type: "listening", port: typeof address === "object" && address !== null ? address.port : 0 })
})
process.on("message", (message) => {
  if (message?.type !== "stats") return
  count()
  process.send?.({ type: "stats", spans, requests, bytes })
})
process.on("disconnect", () => server.close(() => process.exit(0)))
