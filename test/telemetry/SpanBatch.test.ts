import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { describe, expect, it } from "@effect/vitest"
import { Context, Exit, Option, Tracer } from "effect"
import type { EndedSpan } from "../../src/telemetry/RecordedSpan.js"
import { RecordedSpan } from "../../src/telemetry/RecordedSpan.js"
import { jsonBatches, protobufBatches } from "../../src/telemetry/SpanBatch.js"
import type { NewBatch } from "../../src/telemetry/SpanBatch.js"
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

const bodyOf = (newBatch: NewBatch, spans: ReadonlyArray<EndedSpan>) => {
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
