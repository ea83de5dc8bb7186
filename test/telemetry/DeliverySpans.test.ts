import { afterEach, describe, expect, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import type { AttemptServices } from "../../src/delivery/Attempt.js"
import { deliverWith } from "../../src/delivery/Deliver.js"
import { DeliveryTracing } from "../../src/delivery/DeliveryTracing.js"
import type { TransportRequest, TransportResponse } from "../../src/delivery/Transport.js"
import { parseTraceparent } from "../../src/domain/TraceContext.js"
import type { OutboxShape } from "../../src/store/Outbox.js"
import { layer } from "../../src/telemetry/OtlpExport.js"
import type { Sampler } from "../../src/telemetry/Sampler.js"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./OtlpReceiver.js"

const producer = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }

const answer = (status: number): TransportResponse => ({
  status,
  retryAfter: undefined,
  location: undefined,
  snippet: "",
  bodyBytes: 0,
  bodyTruncated: false
})

/** OTLP's span kind and status codes. */
const clientKind = 3
const statusError = 2

const job = {
  jobId: "job-1",
  messageId: "message-1",
  body: new TextEncoder().encode("{}"),
  settings: { endpoints: [{ url: "https://user:secret@hooks.example.com:8443/in?x=1" }] },
  traceparent: `00-${producer.traceId}-${producer.spanId}-01`
}

const traceparentOf = (request: TransportRequest) => request.headers[request.headers.indexOf("traceparent") + 1]

describe("delivery's attempt spans (exported by Effect's OTLP tracer to a loopback collector)", () => {
  const receivers: Array<OtlpReceiver> = []
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close()
  })

  /**
   * Delivery with the attempt spans telemetry provides (`DeliveryTracing`), exporting to a loopback collector as
   * protobuf (the spans are sent when `exported` shuts telemetry down), its receiver answering `statuses` in turn.
   */
  const traced = (statuses: ReadonlyArray<number>, sampler: Sampler = { parentBased: true, root: "always" }) =>
    Effect.gen(function*() {
      const otlp = yield* Effect.promise(() => startOtlpReceiver())
      receivers.push(otlp)
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        layer({
          traces: {
            url: `${otlp.url}/v1/traces`,
            headers: {},
            timeout: Duration.seconds(10),
            compression: "none",
            protocol: "http/protobuf"
          },
          metrics: undefined,
          logs: undefined,
          metricInterval: Duration.seconds(60),
          serviceName: "test",
          sampler,
          spanBatches: { scheduleDelay: Duration.seconds(30), maxBatchSize: 512, maxQueueSize: 2048 }
        }),
        scope
      )
      const tracing = Context.get(context as Context.Context<DeliveryTracing>, DeliveryTracing)
      const requests: Array<TransportRequest> = []
      const transport = {
        post: (request: TransportRequest) => Effect.sync(() => answer(statuses[requests.push(request) - 1] ?? 200))
      }
      const clock = yield* Clock.Clock
      const services: AttemptServices = { transport, clock, traceAttempt: tracing.attempt }
      const outbox = tracing.outbox
      /** The spans exported, once telemetry has shut down (flushing them). */
      const exported = Effect.map(Scope.close(scope, Exit.void), (): ReadonlyArray<ReceivedSpan> => otlp.spans)
      return { exported, requests, services, outbox }
    })

  it.live("each attempt is a client span, child of and linked to the tracking request, sent on as traceparent", () =>
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

      const spans = yield* exported
      expect(spans).toHaveLength(2)
      const [failed, delivered] = [...spans].sort((a, b) =>
        Number(a.attributes["hookrelay.attempt.number"]) - Number(b.attributes["hookrelay.attempt.number"])
      )
      for (const [span, request] of [[failed!, requests[0]!], [delivered!, requests[1]!]] as const) {
        expect(span.name).toBe("POST")
        expect(span.kind).toBe(clientKind)
        expect(span.traceId).toBe(producer.traceId)
        expect(span.parentSpanId).toBe(producer.spanId)
        expect(span.links.map((link) => link.spanId)).toStrictEqual([producer.spanId])
        // The receiver's parent is the attempt.
        expect(parseTraceparent(traceparentOf(request))).toStrictEqual({
          traceId: producer.traceId,
          spanId: span.spanId,
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
        "hookrelay.attempt.outcome": "retryable",
        "http.response.status_code": 503,
        "error.type": "503"
      })
      expect(failed!.attributes["http.request.resend_count"]).toBeUndefined()
      expect(failed!.raw.status).toStrictEqual({ code: statusError, message: "HTTP 503" })
      expect(delivered!.attributes).toMatchObject({
        "hookrelay.attempt.number": 2,
        "http.request.resend_count": 1,
        "hookrelay.attempt.outcome": "success",
        "http.response.status_code": 200
      })
      expect(delivered!.attributes["error.type"]).toBeUndefined()
      expect(delivered!.status).not.toBe(statusError)
    }))

  it.live("a job without a trace context gets a root span, and no link", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200])
      yield* deliverWith(services, { ...job, traceparent: undefined })
      const [span] = yield* exported
      expect(span!.parentSpanId).toBeUndefined()
      expect(span!.links).toStrictEqual([])
      expect(parseTraceparent(traceparentOf(requests[0]!))).toStrictEqual({
        traceId: span!.traceId,
        spanId: span!.spanId,
        sampled: true
      })
    }))

  it.live("an attempt the sampler leaves out exports nothing; its traceparent continues the trace, not sampled", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200], { parentBased: true, root: "always" })
      // The tracking request was not sampled: its attempts follow it.
      const result = yield* deliverWith(services, {
        ...job,
        traceparent: `00-${producer.traceId}-${producer.spanId}-00`
      })
      expect(result._tag).toBe("Delivered")
      expect(yield* exported).toStrictEqual([])
      const sent = parseTraceparent(traceparentOf(requests[0]!))
      expect(sent?.traceId).toBe(producer.traceId)
      expect(sent?.spanId).not.toBe(producer.spanId)
      expect(sent?.sampled).toBe(false)
    }))

  it.live("a root attempt under a sampler that records none gets a trace of its own, not sampled", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([200], { parentBased: true, root: "never" })
      yield* deliverWith(services, { ...job, traceparent: undefined })
      expect(yield* exported).toStrictEqual([])
      const sent = parseTraceparent(traceparentOf(requests[0]!))
      expect(sent?.traceId).toMatch(/^[0-9a-f]{32}$/)
      expect(sent?.traceId).not.toBe(producer.traceId)
      expect(sent?.sampled).toBe(false)
    }))

  it.live("a root attempt under a trace-id ratio is sampled as its trace id says", () =>
    Effect.gen(function*() {
      const { exported, requests, services } = yield* traced([], { parentBased: true, root: 0.5 })
      for (let i = 0; i < 40; i++) yield* deliverWith(services, { ...job, jobId: `job-${i}`, traceparent: undefined })
      const spans = yield* exported
      const sent = requests.map((request) => parseTraceparent(traceparentOf(request))!)
      for (const context of sent) {
        expect(context.sampled).toBe(parseInt(context.traceId.slice(-8), 16) / 0x1_0000_0000 < 0.5)
      }
      expect(spans.map((span) => span.spanId).sort()).toStrictEqual(
        sent.filter((context) => context.sampled).map((context) => context.spanId).sort()
      )
    }))

  it.live("a claim that took jobs and every completion batch are internal spans of their own", () =>
    Effect.gen(function*() {
      const { exported, outbox } = yield* traced([])
      let claims = 0
      const inner = {
        claimDue: () => Effect.succeed(claims++ === 0 ? [{ jobId: "a" }, { jobId: "b" }] : []),
        completeMany: () => Effect.succeed({})
      } as unknown as OutboxShape
      const wrapped = outbox(inner)
      yield* wrapped.claimDue("owner", 0, 100, 30_000)
      // A claim that found nothing is no batch.
      yield* wrapped.claimDue("owner", 0, 100, 30_000)
      yield* wrapped.completeMany("owner", [{ jobId: "a" }, { jobId: "b" }, { jobId: "c" }] as never, [{}] as never)
      const spans = yield* exported
      expect(spans.map((span) => [span.name, span.kind, span.parentSpanId, span.attributes])).toStrictEqual([
        ["hookrelay.claim", 1, undefined, { "hookrelay.batch.jobs": 2, "hookrelay.claim.limit": 100 }],
        ["hookrelay.complete", 1, undefined, { "hookrelay.batch.jobs": 3, "hookrelay.batch.attempts": 1 }]
      ])
    }))

  it.live("without tracing, the request carries no traceparent", () =>
    Effect.gen(function*() {
      const { requests, services } = yield* traced([200])
      yield* deliverWith({ transport: services.transport, clock: services.clock }, job)
      expect(requests[0]!.headers).not.toContain("traceparent")
    }))
})
