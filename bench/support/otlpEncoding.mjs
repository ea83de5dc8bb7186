// Minimal reproduction: the cost of effect/observability's OTLP protobuf encoding per span (effect 4.1.0),
// against JSON for the same spans. Run from the repository root: node bench/support/otlpEncoding.mjs
import { Effect } from "effect"
import { OtlpSerialization } from "effect/observability"
import { performance } from "node:perf_hooks"
import { stdout } from "node:process"

const span = (i) => ({
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: "b7ad6b7169203331",
  parentSpanId: "00f067aa0ba902b7",
  name: "POST",
  kind: 3,
  startTimeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)),
  endTimeUnixNano: String(1_700_000_000_001_000_000n + BigInt(i)),
  attributes: [
    { key: "http.request.method", value: { stringValue: "POST" } },
    { key: "url.full", value: { stringValue: "http://127.0.0.1:9000/hook" } },
    { key: "server.address", value: { stringValue: "127.0.0.1" } },
    { key: "server.port", value: { intValue: 9000 } },
    { key: "hookrelay.attempt.number", value: { intValue: 1 } },
    { key: "hookrelay.message.id", value: { stringValue: `msg-${i}` } },
    { key: "http.response.status_code", value: { intValue: 200 } }
  ],
  droppedAttributesCount: 0,
  events: [],
  droppedEventsCount: 0,
  status: { code: 1 },
  links: [{
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "00f067aa0ba902b7",
    attributes: [],
    droppedAttributesCount: 0
  }],
  droppedLinksCount: 0
})
const data = (n) => ({
  resourceSpans: [{
    resource: { attributes: [{ key: "service.name", value: { stringValue: "bench" } }], droppedAttributesCount: 0 },
    scopeSpans: [{ scope: { name: "effect", version: "4.1.0" }, spans: Array.from({ length: n }, (_, i) => span(i)) }]
  }]
})
const measure = (layer, label) =>
  Effect.runSync(
    Effect.gen(function*() {
      const s = yield* OtlpSerialization.OtlpSerialization
      const batch = data(2048)
      for (let i = 0; i < 5; i++) s.traces(batch) // warm up
      const rounds = 20, start = performance.now()
      for (let i = 0; i < rounds; i++) s.traces(batch)
      const us = (performance.now() - start) * 1000 / (rounds * 2048)
      stdout.write(`${label}: ${us.toFixed(1)} µs per span (batches of 2048)\n`)
    }).pipe(Effect.provide(layer))
  )
measure(OtlpSerialization.layerProtobuf, "protobuf")
measure(OtlpSerialization.layerJson, "json")
