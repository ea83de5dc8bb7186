import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Exit, Option, Tracer } from "effect"
import type { AttemptRecord } from "../../src/delivery/AttemptRecord.js"
import { AttemptSpan, urlAttributes } from "../../src/telemetry/AttemptSpan.js"
import type { AttemptSpanSink, EndedAttemptSpan } from "../../src/telemetry/AttemptSpan.js"
import type { EndedSpan } from "../../src/telemetry/RecordedSpan.js"
import { RecordedSpan } from "../../src/telemetry/RecordedSpan.js"
import { jsonBatches, protobufBatches } from "../../src/telemetry/SpanBatch.js"
import type { ExportedSpan, NewBatch } from "../../src/telemetry/SpanBatch.js"
import { decodeTraces } from "./OtlpProtobuf.js"

const source = {
  resource: OtlpResource.make({ serviceName: "hookrelay-test", serviceVersion: "9.9.9", attributes: { region: "eu" } }),
  scope: { name: "hookrelay", version: "9.9.9" }
}

const producer = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })

const ended = (i: number, attributes: Record<string, unknown>): EndedSpan => {
  let result: EndedSpan | undefined
  const span = new RecordedSpan(
    "POST",
    Option.some(producer),
    Context.empty(),
    [{ _tag: "SpanLink", span: producer, attributes: {} }],
    1_795_854_902_647_000_000n + BigInt(i),
    "client",
    (done) => result = done
  )
  for (const [key, value] of Object.entries(attributes)) span.attribute(key, value)
  span.end(1_795_854_902_648_000_000n + BigInt(i), Exit.void)
  return result!
}

const attemptRecord = (record: Partial<AttemptRecord>): AttemptRecord => ({
  jobId: "job-1",
  url: "https://hooks.example.com/in",
  attemptNumber: 1,
  startedAt: 1_795_854_902_647,
  durationMs: 1,
  outcome: "Success",
  status: 200,
  ...record
})

/** The spans are ended and added by the tests themselves. */
const unexported: AttemptSpanSink = { clock: Clock.make(), exportAttempt: () => {} }
const hooks = urlAttributes("https://hooks.example.com/in")
const other = urlAttributes("https://user:secret@other.example.com:8443/in?x=1")

/** An attempt's span as `DeliverySpans` makes and ends it. */
const endedAttempt = (
  i: number,
  options: {
    readonly record?: Partial<AttemptRecord>
    readonly attemptNumber?: number
    readonly url?: typeof hooks
    readonly parented?: boolean
  } = {}
): EndedAttemptSpan => {
  const parented = options.parented ?? true
  return new AttemptSpan(
    unexported,
    parented ? producer.traceId : "5bf92f3577b34da6a3ce929d0e0e4737",
    `00f067aa0ba9${String(1000 + i).padStart(4, "0")}`,
    parented ? Option.some(producer) : Option.none(),
    parented ? [{ _tag: "SpanLink", span: producer, attributes: {} }] : [],
    1_795_854_902_647_000_000n + BigInt(i),
    options.url ?? hooks,
    `message-${i}`,
    options.attemptNumber ?? 1
  ).end(attemptRecord(options.record ?? {}), 1_795_854_902_648_000_000n + BigInt(i))
}

interface Request {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: { readonly attributes: ReadonlyArray<unknown> }
    readonly scopeSpans: ReadonlyArray<{
      readonly scope: { readonly name: string; readonly version: string }
      readonly spans: ReadonlyArray<{
        readonly spanId: string
        readonly startTimeUnixNano: string
        readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
      }>
    }>
  }>
}

const bodyOf = (newBatch: NewBatch, spans: ReadonlyArray<ExportedSpan>) => {
  const batch = newBatch()
  for (const span of spans) batch.add(span)
  const body = batch.body()
  if (body._tag !== "Uint8Array") throw new Error(`a ${body._tag} body`)
  // A copy: the batch's bytes are reused once it is released.
  const bytes = Buffer.from(body.body)
  batch.release()
  return { bytes, contentType: body.contentType }
}

const decodedSpans = (request: Request) => request.resourceSpans[0]!.scopeSpans[0]!.spans

// Lengths on both sides of where a length prefix takes another byte (128, 16 384) or a text leaves the ASCII copy.
const texts = [
  "",
  "a".repeat(127),
  "a".repeat(128),
  "é".repeat(42),
  "é".repeat(43),
  "✓".repeat(50),
  "😀".repeat(40),
  "x".repeat(16_383),
  "ü".repeat(9000),
  "mixed ascii then ünïcödé"
]
const integers = [0, 1, 127, 128, 16_383, 16_384, 2 ** 21, 2 ** 32, Number.MAX_SAFE_INTEGER, -1, -(2 ** 40)]

describe("a batch's body", () => {
  it("protobuf: the resource, the scope and every span, each attribute exact, decoded by OpenTelemetry's decoder", () => {
    const spans = [
      ...texts.map((text, i) => ended(i, { text, n: i })),
      ...integers.map((integer, i) => ended(100 + i, { integer, yes: i % 2 === 0 })),
      // A span longer than 2^21 bytes: its length takes four bytes, more than the three kept for it.
      ended(200, { big: "b".repeat(2_200_000) }),
      // Enough spans for the request's own lengths to take three bytes and more.
      ...Array.from({ length: 3000 }, (_, i) => ended(1000 + i, { "hookrelay.message.id": `m-${i}`, status: 200 }))
    ]
    const { bytes, contentType } = bodyOf(protobufBatches(source), spans)
    expect(contentType).toBe("application/x-protobuf")
    const request = decodeTraces(bytes) as unknown as Request
    expect(request.resourceSpans).toHaveLength(1)
    const attributes = request.resourceSpans[0]!.resource.attributes
    expect(attributes).toContainEqual({ key: "service.name", value: { stringValue: "hookrelay-test" } })
    expect(attributes).toContainEqual({ key: "region", value: { stringValue: "eu" } })
    expect(request.resourceSpans[0]!.scopeSpans[0]!.scope).toStrictEqual({
      name: "hookrelay",
      version: "9.9.9",
      attributes: []
    })

    const decoded = decodedSpans(request)
    expect(decoded.map((span) => span.spanId)).toStrictEqual(spans.map((span) => span.spanId))
    expect(decoded[0]!.startTimeUnixNano).toBe("1795854902647000000")
    texts.forEach((text, i) =>
      expect(decoded[i]!.attributes).toStrictEqual([
        { key: "text", value: { stringValue: text } },
        { key: "n", value: { intValue: String(i) } }
      ])
    )
    integers.forEach((integer, i) =>
      expect(decoded[texts.length + i]!.attributes).toStrictEqual([
        { key: "integer", value: { intValue: BigInt(integer).toString() } },
        { key: "yes", value: { boolValue: i % 2 === 0 } }
      ])
    )
    expect(decoded[texts.length + integers.length]!.attributes[0]!.value.stringValue).toHaveLength(2_200_000)
    expect(decoded.at(-1)!.attributes).toStrictEqual([
      { key: "hookrelay.message.id", value: { stringValue: "m-2999" } },
      { key: "status", value: { intValue: "200" } }
    ])
  })

  it("protobuf and JSON carry the same spans", () => {
    const spans = Array.from({ length: 50 }, (_, i) => ended(i, { "url.full": `https://hooks.example.com/${i}`, i }))
    const fromProtobuf = decodedSpans(decodeTraces(bodyOf(protobufBatches(source), spans).bytes) as unknown as Request)
    const json = bodyOf(jsonBatches(source), spans)
    expect(json.contentType).toBe("application/json")
    const fromJson = decodedSpans(JSON.parse(json.bytes.toString("utf8")) as Request)
    expect(fromProtobuf).toHaveLength(50)
    // JSON writes an integer as a number, the decoder gives it as a string; an unset status as `{ code: 0 }`.
    expect(fromProtobuf).toStrictEqual(fromJson.map((span) =>
      JSON.parse(
        JSON.stringify({ ...span, status: {} }, (key, value) => key === "intValue" ? String(value) : value)
      )
    ))
  })

  it("an attempt's span is written as its tracer span would be, byte for byte", () => {
    // Runs of one URL, outcome and producer, and changes of each: the ids of a run are copied after the first.
    const attempts = [
      endedAttempt(1),
      endedAttempt(2),
      endedAttempt(3),
      endedAttempt(4, { attemptNumber: 2, record: { outcome: "Retryable", status: 503 } }),
      endedAttempt(5, { attemptNumber: 3, record: { outcome: "Retryable", status: undefined, error: "timed out" } }),
      endedAttempt(6, { url: other, parented: false }),
      endedAttempt(7, { url: other, parented: false }),
      endedAttempt(8, { record: { outcome: "Aborted", status: undefined, error: "aborted" } }),
      endedAttempt(9, { record: { outcome: "Permanent", status: 410 } }),
      endedAttempt(10)
    ]
    for (const attempt of attempts) {
      expect(bodyOf(protobufBatches(source), [attempt]).bytes).toStrictEqual(
        bodyOf(protobufBatches(source), [attempt.recorded()]).bytes
      )
    }
    const decoded = decodedSpans(decodeTraces(bodyOf(protobufBatches(source), attempts).bytes) as unknown as Request)
    expect(decoded.map((span) => span.spanId)).toStrictEqual(attempts.map((attempt) => attempt.spanId))
    expect(decoded[5]!.attributes).toContainEqual({
      key: "url.full",
      value: { stringValue: "https://other.example.com:8443/in?x=1" }
    })
    expect(decoded[4]!.attributes).toContainEqual({ key: "error.type", value: { stringValue: "Retryable" } })
    // JSON writes the recorded span.
    const json = JSON.parse(bodyOf(jsonBatches(source), attempts).bytes.toString("utf8")) as Request
    expect(decodedSpans(json).map((span) => span.spanId)).toStrictEqual(attempts.map((attempt) => attempt.spanId))
  })

  it("spans repeated from batch to batch are written exactly, the body's memory reused in between", () => {
    const newBatch = protobufBatches(source)
    const attributes = { "url.full": "https://hooks.example.com/in", port: 443, ok: true }
    const written = Array.from({ length: 4 }, (_, round) => {
      const batch = newBatch()
      for (let i = 0; i < 3; i++) batch.add(ended(round * 10 + i, attributes))
      const body = batch.body()
      if (body._tag !== "Uint8Array") throw new Error("bytes expected")
      const spans = decodedSpans(decodeTraces(body.body) as unknown as Request)
      // Overwrites the body's memory before the next batch takes it.
      body.body.fill(0xff)
      batch.release()
      return spans.map((span) => span.attributes)
    })
    expect(written.flat()).toStrictEqual(Array.from({ length: 12 }, () => [
      { key: "url.full", value: { stringValue: "https://hooks.example.com/in" } },
      { key: "port", value: { intValue: "443" } },
      { key: "ok", value: { boolValue: true } }
    ]))
  })

  it("a body's bytes are reused by a later batch only once it is released", () => {
    const newBatch = protobufBatches(source)
    const first = newBatch()
    first.add(ended(1, { a: "first" }))
    const firstBody = first.body()
    const second = newBatch()
    second.add(ended(2, { a: "second" }))
    second.body()
    if (firstBody._tag !== "Uint8Array") throw new Error("bytes expected")
    expect(decodedSpans(decodeTraces(firstBody.body) as unknown as Request)[0]!.attributes).toStrictEqual([
      { key: "a", value: { stringValue: "first" } }
    ])
    first.release()
    second.release()
  })
})
