import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Scope } from "effect"
import { deliverWith } from "../../src/delivery/Deliver.js"
import type { TransportRequest, TransportResponse } from "../../src/delivery/Transport.js"
import { parseTraceparent } from "../../src/domain/TraceContext.js"
import { makeDeliverySpans } from "../../src/telemetry/DeliverySpans.js"
import type { Sampler } from "../../src/telemetry/Sampler.js"
import { makeSpanExporter } from "../../src/telemetry/SpanExporter.js"

const producer = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }

const answer = (status: number): TransportResponse => ({
  status,
  retryAfter: undefined,
  location: undefined,
  snippet: "",
  bodyBytes: 0,
  bodyTruncated: false
})

/** A span as the OTLP/JSON body carries it. */
interface OtlpSpan {
  readonly name: string
  readonly kind: number
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly status: { readonly code: number; readonly message?: string }
}

const attributes = (span: OtlpSpan) =>
  Object.fromEntries(span.attributes.map(({ key, value }) => [key, Object.values(value)[0]]))

/** OTLP's span kind and status codes. */
const clientKind = 3
const statusError = 2

/**
 * Delivery with attempt spans on the tracer hookrelay exports with (`SpanExporter`), posting to an in-memory
 * collector (the spans are sent when `scope` closes), its receiver answering `statuses` in turn.
 */
const traced = (statuses: ReadonlyArray<number>, sampler: Sampler = { parentBased: true, root: "always" }) =>
  Effect.gen(function*() {
    const bodies: Array<{ resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }> }> = []
    const collector = HttpClient.make((request) =>
      Effect.sync(() => {
        if (request.body._tag === "Uint8Array") bodies.push(JSON.parse(new TextDecoder().decode(request.body.body)))
        return HttpClientResponse.fromWeb(request, new Response("{}"))
      })
    )
    const scope = yield* Scope.make()
    const exporter = yield* makeSpanExporter({
      url: "http://collector.test/v1/traces",
      headers: {},
      protocol: "http/json",
      serviceName: "test",
      serviceVersion: "0.0.0",
      batches: { scheduleDelay: Duration.seconds(5), maxBatchSize: 512, maxQueueSize: 2048 },
      shutdownTimeout: Duration.seconds(5)
    }).pipe(
      Effect.provide(Layer.merge(Layer.succeed(HttpClient.HttpClient, collector), OtlpSerialization.layerJson)),
      Scope.extend(scope)
    )
    const tracing = makeDeliverySpans({
      tracer: exporter.tracer,
      sampler,
      exportAttempt: exporter.exportAttempt,
      clock: yield* Effect.clock
    })
    const requests: Array<TransportRequest> = []
    const transport = {
      post: (request: TransportRequest) => Effect.sync(() => answer(statuses[requests.push(request) - 1] ?? 200))
    }
    const services = { transport, clock: yield* Effect.clock, traceAttempt: tracing.attempt }
    /** The spans exported, once the tracer has flushed them. */
    const exported = Effect.map(
      Scope.close(scope, Exit.void),
      () => bodies.flatMap((body) => body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
    )
    return { exported, requests, services }
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
      const { exported, requests, services } = yield* traced([503, 200])
      // The first attempt fails and waits for its retry in the store; the second runs from the state it left.
      const first = yield* deliverWith(services, job, { maxInlineDelay: 0 })
      expect(first._tag).toBe("Deferred")
      const endpoints = first._tag === "Deferred" ? first.endpoints : []
      yield* deliverWith(services, {
        ...job,
        endpointStates: endpoints.map((state) => ({ ...state, nextAttemptAt: 0 }))
      })

      const [failed, delivered] = yield* exported
      for (const [span, request] of [[failed!, requests[0]!], [delivered!, requests[1]!]] as const) {
        expect(span.name).toBe("POST")
        expect(span.kind).toBe(clientKind)
        expect(span.traceId).toBe(producer.traceId)
        expect(span.parentSpanId).toBe(producer.spanId)
        expect(span.links.map((link) => link.spanId)).toStrictEqual([producer.spanId])
        // The receiver's parent is the attempt.
        const sent = request.headers[request.headers.indexOf("traceparent") + 1]
        expect(parseTraceparent(sent)).toStrictEqual({ traceId: producer.traceId, spanId: span.spanId, sampled: true })
        expect(attributes(span)).toMatchObject({
          "http.request.method": "POST",
          "url.full": "https://hooks.example.com:8443/in?x=1",
          "server.address": "hooks.example.com",
          "server.port": 8443,
          "hookrelay.message.id": "message-1"
        })
      }
      expect(attributes(failed!)).toMatchObject({
        "hookrelay.attempt.number": 1,
        "hookrelay.attempt.outcome": "Retryable",
        "http.response.status_code": 503,
        "error.type": "503"
      })
      expect(attributes(failed!)["http.request.resend_count"]).toBeUndefined()
      expect(failed!.status).toStrictEqual({ code: statusError, message: "HTTP 503" })
      expect(attributes(delivered!)).toMatchObject({
        "hookrelay.attempt.number": 2,
        "http.request.resend_count": 1,
        "hookrelay.attempt.outcome": "Success",
        "http.response.status_code": 200
      })
      expect(attributes(delivered!)["error.type"]).toBeUndefined()
      expect(delivered!.status.code).not.toBe(statusError)
    }))

  it.effect("a job without a trace context gets a root span, and no link", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200])
      yield* deliverWith(services, { ...job, traceparent: undefined })
      const [span] = yield* exported
      expect(span!.parentSpanId).toBeUndefined()
      expect(span!.links).toStrictEqual([])
      expect(requests[0]!.headers).toContain("traceparent")
    }))

  it.effect("an attempt the sampler leaves out exports nothing; its traceparent continues the trace, not sampled", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200], { parentBased: true, root: "always" })
      // The tracking request was not sampled: its attempts follow it.
      const result = yield* deliverWith(services, {
        ...job,
        traceparent: `00-${producer.traceId}-${producer.spanId}-00`
      })
      expect(result._tag).toBe("Delivered")
      expect(yield* exported).toStrictEqual([])
      const sent = parseTraceparent(requests[0]!.headers[requests[0]!.headers.indexOf("traceparent") + 1])
      expect(sent?.traceId).toBe(producer.traceId)
      expect(sent?.spanId).not.toBe(producer.spanId)
      expect(sent?.sampled).toBe(false)
    }))

  it.effect("a root attempt under a sampler that records none gets a trace of its own, not sampled", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200], { parentBased: true, root: "never" })
      yield* deliverWith(services, { ...job, traceparent: undefined })
      expect(yield* exported).toStrictEqual([])
      const sent = parseTraceparent(requests[0]!.headers[requests[0]!.headers.indexOf("traceparent") + 1])
      expect(sent?.traceId).not.toBe(producer.traceId)
      expect(sent?.sampled).toBe(false)
    }))

  it.effect("without tracing, the request carries no traceparent", () =>
    Effect.gen(function*() {
      const { requests, services } = yield* traced([200])
      yield* deliverWith({ transport: services.transport, clock: services.clock }, job)
      expect(requests[0]!.headers).not.toContain("traceparent")
    }))
})
