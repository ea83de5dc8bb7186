/**
 * An OTLP/HTTP collector for the telemetry benchmark (`bench/telemetry.ts`): answers every POST to `/v1/traces` and
 * `/v1/metrics` with 200 as soon as its body has arrived, and counts the spans when asked. The bodies are decoded only
 * then, after the measured phase, so that decoding them does not take the cores the server is measured on: a real
 * collector runs on a machine of its own. Plain JavaScript in a process of its own; sends its port to its parent over
 * IPC, answers `{ type: "stats" }` with its counts, and exits when the parent disconnects.
 */
/* global Buffer, process */
import { createServer } from "node:http"
import { gunzipSync } from "node:zlib"

let spans = 0
let requests = 0
let bytes = 0
/** Bodies not counted yet. */
let pending = []

const count = () => {
  for (const body of pending) {
    try {
      // `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`: a gzip stream starts with 0x1f 0x8b.
      const text = (body[0] === 0x1f && body[1] === 0x8b ? gunzipSync(body) : body).toString("utf8")
      const parsed = JSON.parse(text)
      for (const resource of parsed.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) spans += (scope.spans ?? []).length
      }
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
    pending.push(body)
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
