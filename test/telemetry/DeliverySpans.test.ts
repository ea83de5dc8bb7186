import { describe, expect, it } from "@effect/vitest"
import { SpanKind, SpanStatusCode } from "@opentelemetry/api"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"
import { deliverWith } from "../../src/delivery/Deliver.js"
import type { TransportRequest, TransportResponse } from "../../src/delivery/Transport.js"
import { parseTraceparent } from "../../src/domain/TraceContext.js"
import { makeDeliverySpans } from "../../src/telemetry/DeliverySpans.js"

const producer = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }

const answer = (status: number): TransportResponse => ({
  status,
  retryAfter: undefined,
  location: undefined,
  snippet: "",
  bodyBytes: 0,
  bodyTruncated: false
})

/** Delivery with attempt spans on an in-memory OpenTelemetry tracer, its receiver answering `statuses` in turn. */
const traced = (statuses: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const tracing = makeDeliverySpans(provider.getTracer("test"), yield* Effect.tracer, yield* Effect.clock)
    const requests: Array<TransportRequest> = []
    const transport = {
      post: (request: TransportRequest) => Effect.sync(() => answer(statuses[requests.push(request) - 1] ?? 200))
    }
    const services = { transport, clock: yield* Effect.clock, traceAttempt: tracing.attempt }
    return { exporter, requests, services }
  })

const job = {
  jobId: "job-1",
  messageId: "message-1",
  body: new TextEncoder().encode("{}"),
  settings: { endpoints: [{ url: "https://user:secret@hooks.example.com:8443/in?x=1" }] },
  traceparent: `00-${producer.traceId}-${producer.spanId}-01`
}

describe("delivery's attempt spans", () => {
  it.effect("each attempt is a client span, child of and linked to the tracking request, sent on as traceparent", () =>
    Effect.gen(function*() {
      const { exporter, requests, services } = yield* traced([503, 200])
      // The first attempt fails and waits for its retry in the store; the second runs from the state it left.
      const first = yield* deliverWith(services, job, { maxInlineDelay: 0 })
      expect(first._tag).toBe("Deferred")
      const endpoints = first._tag === "Deferred" ? first.endpoints : []
      yield* deliverWith(services, {
        ...job,
        endpointStates: endpoints.map((state) => ({ ...state, nextAttemptAt: 0 }))
      })

      const [failed, delivered] = exporter.getFinishedSpans()
      for (const [span, request] of [[failed!, requests[0]!], [delivered!, requests[1]!]] as const) {
        expect(span.name).toBe("POST")
        expect(span.kind).toBe(SpanKind.CLIENT)
        expect(span.spanContext().traceId).toBe(producer.traceId)
        expect(span.parentSpanContext?.spanId).toBe(producer.spanId)
        expect(span.links.map((link) => link.context.spanId)).toStrictEqual([producer.spanId])
        // The receiver's parent is the attempt.
        const sent = request.headers[request.headers.indexOf("traceparent") + 1]
        expect(parseTraceparent(sent)).toStrictEqual({
          traceId: producer.traceId,
          spanId: span.spanContext().spanId,
          sampled: true
        })
        expect(span.attributes).toMatchObject({
          "http.request.method": "POST",
          "url.full": "https://hooks.example.com:8443/in?x=1",
          "server.address": "hooks.example.com",
          "server.port": 8443,
          "hookrelay.message.id": "message-1"
        })
      }
      expect(failed!.attributes).toMatchObject({
        "hookrelay.attempt.number": 1,
        "hookrelay.attempt.outcome": "Retryable",
        "http.response.status_code": 503,
        "error.type": "503"
      })
      expect(failed!.attributes["http.request.resend_count"]).toBeUndefined()
      expect(failed!.status.code).toBe(SpanStatusCode.ERROR)
      expect(delivered!.attributes).toMatchObject({
        "hookrelay.attempt.number": 2,
        "http.request.resend_count": 1,
        "hookrelay.attempt.outcome": "Success",
        "http.response.status_code": 200
      })
      expect(delivered!.attributes["error.type"]).toBeUndefined()
      expect(delivered!.status.code).toBe(SpanStatusCode.UNSET)
    }))

  it.effect("a job without a trace context gets a root span, and no link", () =>
    Effect.gen(function*() {
      const { exporter, requests, services } = yield* traced([200])
      yield* deliverWith(services, { ...job, traceparent: undefined })
      const [span] = exporter.getFinishedSpans()
      expect(span!.parentSpanContext).toBeUndefined()
      expect(span!.links).toStrictEqual([])
      expect(requests[0]!.headers).toContain("traceparent")
    }))

  it.effect("without tracing, the request carries no traceparent", () =>
    Effect.gen(function*() {
      const { requests, services } = yield* traced([200])
      yield* deliverWith({ transport: services.transport, clock: services.clock }, job)
      expect(requests[0]!.headers).not.toContain("traceparent")
    }))
})
