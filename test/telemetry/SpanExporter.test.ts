import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Logger, Option, Scope, TestClock } from "effect"
import { makeSpanExporter } from "../../src/telemetry/SpanExporter.js"
import type { SpanBatches } from "../../src/telemetry/TelemetryConfig.js"

interface Body {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: { readonly attributes: ReadonlyArray<{ key: string; value: { stringValue?: string } }> }
    readonly scopeSpans: ReadonlyArray<{
      readonly scope: { readonly name: string }
      readonly spans: ReadonlyArray<{ readonly name: string; readonly attributes: ReadonlyArray<unknown> }>
    }>
  }>
}

const batches: SpanBatches = { scheduleDelay: Duration.seconds(5), maxBatchSize: 3, maxQueueSize: 100 }

/**
 * The exporting tracer over an in-memory collector that answers as `answer` says; `bodies` are what it received,
 * decoded at once (a body's memory is reused once its export is over). The exporter lives in `scope`.
 */
const exporting = (
  options: { readonly batches?: SpanBatches; readonly answer?: (n: number) => Effect.Effect<number> } = {}
) =>
  Effect.gen(function*() {
    const bodies: Array<Body> = []
    const headers: Array<Record<string, string>> = []
    let requests = 0
    const collector = HttpClient.make((request: HttpClientRequest.HttpClientRequest) =>
      Effect.suspend(() => {
        requests += 1
        if (request.body._tag === "Uint8Array") bodies.push(JSON.parse(new TextDecoder().decode(request.body.body)))
        headers.push({ ...request.headers })
        return Effect.map(
          options.answer?.(requests) ?? Effect.succeed(200),
          (status) => HttpClientResponse.fromWeb(request, new Response("{}", { status }))
        )
      })
    )
    const scope = yield* Scope.make()
    const { tracer } = yield* makeSpanExporter({
      url: "http://collector.test/v1/traces",
      headers: { authorization: "Bearer t" },
      protocol: "http/json",
      serviceName: "relay-test",
      serviceVersion: "1.2.3",
      batches: options.batches ?? batches,
      shutdownTimeout: Duration.seconds(5)
    }).pipe(
      Effect.provide(Layer.merge(Layer.succeed(HttpClient.HttpClient, collector), OtlpSerialization.layerJson)),
      Scope.extend(scope)
    )
    const span = (name: string, attributes: Record<string, unknown> = {}) => {
      const made = tracer.span(name, Option.none(), Context.empty(), [], 1n, "internal")
      for (const [key, value] of Object.entries(attributes)) made.attribute(key, value)
      made.end(2n, Exit.void)
    }
    const names = () => bodies.map((body) => body.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => s.name))
    return { bodies, headers, names, span, scope, requests: () => requests }
  })

describe("the span exporter", () => {
  it.effect("sends a batch as soon as it is full, and what is left every scheduleDelay", () =>
    Effect.gen(function*() {
      const { headers, names, span } = yield* exporting()
      for (const name of ["a", "b", "c", "d"]) span(name)
      yield* Effect.yieldNow()
      expect(names()).toStrictEqual([["a", "b", "c"]])
      yield* TestClock.adjust(Duration.seconds(5))
      expect(names()).toStrictEqual([["a", "b", "c"], ["d"]])
      // Nothing ended since: no empty export.
      yield* TestClock.adjust(Duration.seconds(5))
      expect(names()).toHaveLength(2)
      expect(headers[0]).toMatchObject({
        authorization: "Bearer t",
        "content-type": "application/json",
        "user-agent": "hookrelay/1.2.3"
      })
    }))

  it.effect("the body is OTLP/JSON under the resource of OTEL_SERVICE_NAME and the version, scope hookrelay", () =>
    Effect.gen(function*() {
      const { bodies, span } = yield* exporting()
      for (const name of ["a", "b", "c"]) span(name, { "url.full": "https://example.com/\"q\"" })
      yield* Effect.yieldNow()
      const [resourceSpans] = bodies[0]!.resourceSpans
      const resource = Object.fromEntries(resourceSpans!.resource.attributes.map((a) => [a.key, a.value.stringValue]))
      expect(resource).toMatchObject({ "service.name": "relay-test", "service.version": "1.2.3" })
      expect(resourceSpans!.scopeSpans[0]!.scope.name).toBe("hookrelay")
      expect(resourceSpans!.scopeSpans[0]!.spans[0]!.attributes).toStrictEqual([
        { key: "url.full", value: { stringValue: "https://example.com/\"q\"" } }
      ])
    }))

  it.effect("batches larger than the first guess, one after another in reused memory, arrive whole", () =>
    Effect.gen(function*() {
      const { bodies, span } = yield* exporting({ batches: { ...batches, maxBatchSize: 50 } })
      for (let round = 0; round < 4; round++) {
        // 50 spans of ~4 KB each: beyond the first body's 64 KB; later rounds reuse the memory of the one before.
        for (let i = 0; i < 50; i++) span(`r${round}-${i}`, { pad: `${round}`.repeat(4000 + round * 1000), i })
        yield* Effect.yieldNow()
      }
      expect(bodies).toHaveLength(4)
      bodies.forEach((body, round) => {
        const spans = body.resourceSpans[0]!.scopeSpans[0]!.spans
        expect(spans.map((s) => s.name)).toStrictEqual(Array.from({ length: 50 }, (_, i) => `r${round}-${i}`))
        expect(spans[49]!.attributes[0]).toStrictEqual({
          key: "pad",
          value: { stringValue: `${round}`.repeat(4000 + round * 1000) }
        })
      })
    }))

  it.effect("a failed export is tried three more times a second apart, then its spans are dropped", () =>
    Effect.gen(function*() {
      const { bodies, names, requests, span } = yield* exporting({ answer: () => Effect.succeed(503) })
      for (const name of ["a", "b", "c"]) span(name)
      yield* Effect.yieldNow()
      expect(requests()).toBe(1)
      for (let retry = 2; retry <= 4; retry++) {
        yield* TestClock.adjust(Duration.seconds(1))
        expect(requests()).toBe(retry)
      }
      yield* TestClock.adjust(Duration.seconds(10))
      expect(requests()).toBe(4)
      expect(new Set(names().map((n) => n.join()))).toStrictEqual(new Set(["a,b,c"]))
      expect(bodies).toHaveLength(4)
    }))

  it.effect("with the collector stuck, spans beyond OTEL_BSP_MAX_QUEUE_SIZE are dropped, and a warning counts them", () =>
    Effect.gen(function*() {
      let stuck = true
      const { names, requests, span } = yield* exporting({
        batches: { ...batches, maxBatchSize: 2, maxQueueSize: 4 },
        answer: () => stuck ? Effect.never : Effect.succeed(200)
      })
      // Two batches in flight hold the four spans allowed; the next six are dropped.
      for (let i = 0; i < 10; i++) span(`s${i}`)
      yield* Effect.yieldNow()
      expect(requests()).toBe(2)
      expect(names()).toStrictEqual([["s0", "s1"], ["s2", "s3"]])
      stuck = false
      // The stuck exports never end; the exporter holds no more than it may, whatever else ends meanwhile.
      for (let i = 10; i < 20; i++) span(`s${i}`)
      yield* TestClock.adjust(Duration.seconds(5))
      expect(requests()).toBe(2)
    }))

  it.effect("when exports end again, spans flow, and the warning says how many were dropped", () =>
    Effect.gen(function*() {
      const logs: Array<string> = []
      const logger = Logger.make(({ message }) => logs.push(String(message)))
      const { names, span } = yield* exporting({
        batches: { ...batches, maxBatchSize: 2, maxQueueSize: 2 },
        answer: (n) => n === 1 ? Effect.as(Effect.sleep(Duration.seconds(1)), 200) : Effect.succeed(200)
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
      for (let i = 0; i < 5; i++) span(`s${i}`)
      yield* TestClock.adjust(Duration.seconds(1))
      span("s5")
      span("s6")
      yield* Effect.yieldNow()
      expect(names()).toStrictEqual([["s0", "s1"], ["s5", "s6"]])
      expect(logs.flat().join("\n")).toContain("3 spans dropped")
    }))

  it.effect("on shutdown it sends what it holds", () =>
    Effect.gen(function*() {
      const { names, scope, span } = yield* exporting()
      span("last")
      expect(names()).toStrictEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(names()).toStrictEqual([["last"]])
    }))
})
