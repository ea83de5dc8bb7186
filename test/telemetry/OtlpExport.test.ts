import { afterEach, describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Metric, Option, Scope, Tracer } from "effect"
import { layer } from "../../src/telemetry/OtlpExport.js"
import type { OtlpTarget } from "../../src/telemetry/OtlpTarget.js"
import type { Sampler } from "../../src/telemetry/Sampler.js"
import type { TelemetryOptions } from "../../src/telemetry/TelemetryConfig.js"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./OtlpReceiver.js"

const producer = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })

const target = (url: string, signal: string, options: Partial<OtlpTarget> = {}): OtlpTarget => ({
  url: `${url}/v1/${signal}`,
  headers: {},
  timeout: Duration.seconds(10),
  compression: "none",
  protocol: "http/protobuf",
  ...options
})

const waitUntil = async (condition: () => boolean, what: string, timeoutMillis = 10_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
const sleep = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

interface Setup {
  readonly target?: Partial<OtlpTarget>
  readonly sampler?: Sampler
  readonly maxBatchSize?: number
  readonly scheduleDelay?: Duration.Duration
  readonly signals?: ReadonlyArray<"traces" | "metrics" | "logs">
  readonly answer?: (request: number) => number | "never"
}

describe("telemetry exported by Effect's OTLP exporters, read by a loopback collector", () => {
  const receivers: Array<OtlpReceiver> = []
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close()
  })

  /**
   * The telemetry layer (`OtlpExport.layer`) built in a scope of its own, exporting to a new loopback collector:
   * `run` runs an effect under its tracer and logger; `close` shuts it down (flushing what it holds).
   */
  const exporting = (setup: Setup = {}) =>
    Effect.gen(function*() {
      const otlp = yield* Effect.promise(() => startOtlpReceiver(setup.answer ? { answer: setup.answer } : {}))
      receivers.push(otlp)
      const signals = setup.signals ?? ["traces"]
      const options: TelemetryOptions = {
        traces: signals.includes("traces") ? target(otlp.url, "traces", setup.target) : undefined,
        metrics: signals.includes("metrics") ? target(otlp.url, "metrics", setup.target) : undefined,
        logs: signals.includes("logs") ? target(otlp.url, "logs", setup.target) : undefined,
        metricInterval: Duration.millis(200),
        serviceName: "relay-test",
        sampler: setup.sampler ?? { parentBased: true, root: "always" },
        spanBatches: {
          scheduleDelay: setup.scheduleDelay ?? Duration.seconds(30),
          maxBatchSize: setup.maxBatchSize ?? 512,
          maxQueueSize: 2048
        }
      }
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(layer(options), scope)
      const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.provideContext(effect, context)
      return { otlp, context, run, close: Scope.close(scope, Exit.void) }
    })

  const byName = (spans: ReadonlyArray<ReceivedSpan>, name: string) => spans.find((span) => span.name === name)!

  it.live("spans carry ids, parent, kind, times, attributes, links and status, decoded by OpenTelemetry's decoder", () =>
    Effect.gen(function*() {
      const { close, otlp, run } = yield* exporting()
      yield* run(
        Effect.flatMap(
          Effect.currentSpan,
          (span) => Effect.sync(() => span.event("retry scheduled", 1_795_854_902_647_500_000n, { delay: 30 }))
        ).pipe(
          Effect.withSpan("child", {
            kind: "client",
            attributes: { "url.full": "https://hooks.example.com/in?q=\"a\"", "server.port": 8443, ok: true },
            links: [{ span: producer, attributes: { why: "producer" } }]
          }),
          Effect.withSpan("request", { kind: "server", parent: producer })
        )
      )
      yield* run(Effect.ignore(Effect.withSpan(Effect.fail("HTTP 503"), "plain failure")))
      yield* run(Effect.ignore(Effect.withSpan(Effect.fail(new TypeError("bad input")), "thrown")))
      yield* run(Effect.withSpan(Effect.void, "root", { kind: "internal" }))
      yield* run(Effect.exit(Effect.withSpan(Effect.interrupt, "interrupted")))
      yield* close
      expect(otlp.spans.map((span) => span.name).sort()).toStrictEqual(
        ["child", "interrupted", "plain failure", "request", "root", "thrown"]
      )
      for (const span of otlp.spans) {
        expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
        expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
        expect(BigInt(span.raw.endTimeUnixNano!)).toBeGreaterThanOrEqual(BigInt(span.raw.startTimeUnixNano!))
        expect(span.service).toBe("relay-test")
      }
      expect(new Set(otlp.spans.map((span) => span.spanId)).size).toBe(6)

      const request = byName(otlp.spans, "request")
      const child = byName(otlp.spans, "child")
      // OTLP span kinds: 2 server, 3 client, 1 internal.
      expect(request).toMatchObject({ kind: 2, traceId: producer.traceId, parentSpanId: producer.spanId })
      expect(child).toMatchObject({ kind: 3, traceId: producer.traceId, parentSpanId: request.spanId })
      expect(child.raw.attributes).toStrictEqual([
        { key: "url.full", value: { stringValue: "https://hooks.example.com/in?q=\"a\"" } },
        { key: "server.port", value: { intValue: "8443" } },
        { key: "ok", value: { boolValue: true } }
      ])
      expect(child.links).toStrictEqual([
        expect.objectContaining({
          traceId: producer.traceId,
          spanId: producer.spanId,
          attributes: [{ key: "why", value: { stringValue: "producer" } }]
        })
      ])
      const root = byName(otlp.spans, "root")
      expect(root).toMatchObject({ kind: 1, parentSpanId: undefined })
      expect(root.traceId).not.toBe(request.traceId)
      // A failure's first error is the status message (OTLP's Error is 2); an Error adds the exception event.
      expect(byName(otlp.spans, "plain failure").raw.status).toStrictEqual({ code: 2, message: "HTTP 503" })
      const thrown = byName(otlp.spans, "thrown").raw
      expect(thrown.status).toStrictEqual({ code: 2, message: "bad input" })
      const exception = thrown.events!.find((event) => event.name === "exception")!
      expect(exception.attributes).toEqual(expect.arrayContaining([
        { key: "exception.type", value: { stringValue: "TypeError" } },
        { key: "exception.message", value: { stringValue: "bad input" } }
      ]))
      expect(request.raw.status?.code).not.toBe(2)
      expect(child.raw.events).toStrictEqual([
        expect.objectContaining({
          name: "retry scheduled",
          timeUnixNano: "1795854902647500000",
          attributes: [{ key: "delay", value: { intValue: "30" } }]
        })
      ])
      // An interruption (a client that went away, a shutdown) is not the span's failure.
      expect(byName(otlp.spans, "interrupted").raw.status?.code ?? 0).toBe(0)
    }))

  it.live("every kind of attribute value arrives exact, in protobuf as in JSON", () =>
    Effect.gen(function*() {
      const texts = ["", "a".repeat(128), "é".repeat(43), "✓ \u2028 \n \u0000 😀", "x".repeat(16_384)]
      const integers = [0, 127, 128, 16_384, 2 ** 32, Number.MAX_SAFE_INTEGER, -1, -(2 ** 40)]
      const attributes = (i: number) => ({ text: texts[i % texts.length], integer: integers[i % integers.length], i })
      const sent = (protocol: OtlpTarget["protocol"]) =>
        Effect.gen(function*() {
          const { close, otlp, run } = yield* exporting({ target: { protocol } })
          for (let i = 0; i < 40; i++) {
            yield* run(Effect.withSpan(Effect.void, `span-${i}`, { attributes: attributes(i) }))
          }
          yield* close
          return otlp.spans
        })
      for (const protocol of ["http/protobuf", "http/json"] as const) {
        const spans = yield* sent(protocol)
        expect(spans.map((span) => span.name)).toStrictEqual(Array.from({ length: 40 }, (_, i) => `span-${i}`))
        spans.forEach((span, i) => expect(span.attributes, `${protocol} ${i}`).toStrictEqual(attributes(i)))
      }
      // Many spans, one longer than 2^21 bytes, in one export: ids of W3C's lengths, all distinct.
      const { close, otlp, run } = yield* exporting({ maxBatchSize: 5000 })
      yield* run(Effect.withSpan(Effect.void, "big", { attributes: { big: "b".repeat(2_200_000) } }))
      for (let i = 0; i < 3000; i++) yield* run(Effect.withSpan(Effect.void, `m-${i}`, { attributes: { i } }))
      yield* close
      expect(otlp.exports).toHaveLength(1)
      expect(otlp.spans[0]!.attributes.big).toHaveLength(2_200_000)
      expect(otlp.spans.at(-1)!.attributes).toStrictEqual({ i: 2999 })
      for (const span of otlp.spans) {
        expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
        expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
      }
      expect(new Set(otlp.spans.map((span) => span.spanId)).size).toBe(3001)
      expect(new Set(otlp.spans.map((span) => span.traceId)).size).toBe(3001)
    }))

  it.live("a batch leaves as soon as it is full, what is left every scheduleDelay, and nothing when there is none", () =>
    Effect.gen(function*() {
      const { otlp, run } = yield* exporting({ maxBatchSize: 3, scheduleDelay: Duration.millis(400) })
      for (const name of ["a", "b", "c", "d"]) yield* run(Effect.withSpan(Effect.void, name))
      yield* Effect.promise(() => waitUntil(() => otlp.exports.length === 1, "the full batch", 300))
      expect(otlp.exports.map((spans) => spans.map((span) => span.name))).toStrictEqual([["a", "b", "c"]])
      yield* Effect.promise(() => waitUntil(() => otlp.exports.length === 2, "the timer's batch", 2_000))
      expect(otlp.exports[1]!.map((span) => span.name)).toStrictEqual(["d"])
      yield* sleep(900)
      expect(otlp.headers).toHaveLength(2)
    }))

  it.live("posts with OTEL_EXPORTER_OTLP_HEADERS and hookrelay's user agent, under the service's resource", () =>
    Effect.gen(function*() {
      const { close, otlp, run } = yield* exporting({ target: { headers: { authorization: "Bearer t" } } })
      yield* run(Effect.withSpan(Effect.void, "a"))
      yield* close
      expect(otlp.headers[0]).toMatchObject({ authorization: "Bearer t", "content-type": "application/x-protobuf" })
      expect(otlp.headers[0]!["user-agent"]).toMatch(/^hookrelay\/\d+\.\d+\.\d+ /)
      expect(otlp.spans[0]!.resource).toMatchObject({ "service.name": "relay-test", "service.version": "0.1.0" })
    }))

  it.live("gzips the bodies when OTEL_EXPORTER_OTLP_COMPRESSION is gzip, and only then", () =>
    Effect.gen(function*() {
      for (const compression of ["gzip", "none"] as const) {
        const { close, otlp, run } = yield* exporting({ target: { compression } })
        // Bodies below 1 KB are sent as they are.
        for (let i = 0; i < 20; i++) {
          yield* run(Effect.withSpan(Effect.void, `s${i}`, { attributes: { pad: "p".repeat(100) } }))
        }
        yield* close
        expect(otlp.spans).toHaveLength(20)
        expect(otlp.headers[0]!["content-encoding"]).toBe(compression === "gzip" ? "gzip" : undefined)
      }
    }))

  it.live(
    "a failed export is tried three more times a second apart, then its spans are dropped",
    () =>
      Effect.gen(function*() {
        const { otlp, run } = yield* exporting({ maxBatchSize: 2, answer: () => 503 })
        yield* run(Effect.withSpan(Effect.void, "a"))
        yield* run(Effect.withSpan(Effect.void, "b"))
        yield* Effect.promise(() => waitUntil(() => otlp.headers.length === 4, "the retries", 5_000))
        yield* sleep(1_500)
        expect(otlp.headers).toHaveLength(4)
        expect(otlp.spans).toStrictEqual([])
      }),
    15_000
  )

  it.live("on shutdown it sends what it holds", () =>
    Effect.gen(function*() {
      const { close, otlp, run } = yield* exporting()
      yield* run(Effect.withSpan(Effect.void, "last"))
      expect(otlp.spans).toStrictEqual([])
      yield* close
      expect(otlp.spans.map((span) => span.name)).toStrictEqual(["last"])
    }))

  it.live("spans the sampler leaves out are not exported; their children follow them", () =>
    Effect.gen(function*() {
      const { close, otlp, run } = yield* exporting({ sampler: { parentBased: true, root: "never" } })
      yield* run(Effect.withSpan(Effect.withSpan(Effect.void, "child"), "unsampled root"))
      const sampledParent = Tracer.externalSpan({ ...producer, sampled: true })
      yield* run(Effect.withSpan(Effect.withSpan(Effect.void, "child of sampled"), "remote", { parent: sampledParent }))
      yield* close
      expect(otlp.spans.map((span) => span.name).sort()).toStrictEqual(["child of sampled", "remote"])
    }))

  it.live("metrics and log lines go to their own paths", () =>
    Effect.gen(function*() {
      for (const protocol of ["http/protobuf", "http/json"] as const) {
        const { close, otlp, run } = yield* exporting({ signals: ["metrics", "logs"], target: { protocol } })
        yield* run(Metric.update(Metric.counter("hookrelay_test_total"), 3))
        yield* run(Effect.logInfo("exported line"))
        yield* Effect.promise(() => waitUntil(() => otlp.metricNames.has("hookrelay_test_total"), "the metric"))
        yield* close
        expect(otlp.headers.map((headers) => headers["content-type"])).toContain(
          protocol === "http/json" ? "application/json" : "application/x-protobuf"
        )
        // Read from JSON bodies: OpenTelemetry's generated decoder has no logs messages.
        if (protocol === "http/json") expect(otlp.logs).toContain("exported line")
      }
    }))

  it.live("telemetry without traces leaves Effect's tracer and provides no delivery spans", () =>
    Effect.gen(function*() {
      const { close, context } = yield* exporting({ signals: ["metrics"] })
      expect(Context.get(context, Tracer.Tracer)).toBe(Tracer.nativeTracer)
      expect(Option.isNone(Context.getOption(context as Context.Context<unknown>, Tracer.ParentSpan))).toBe(true)
      yield* close
    }))
})
