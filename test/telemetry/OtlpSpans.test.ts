import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Exit, FiberId, Option, Tracer } from "effect"
import { spanJson, toOtlpSpan } from "../../src/telemetry/OtlpSpans.js"
import type { OtlpSpan } from "../../src/telemetry/OtlpSpans.js"
import type { EndedSpan } from "../../src/telemetry/RecordedSpan.js"
import { RecordedSpan } from "../../src/telemetry/RecordedSpan.js"
import { protobufBatches } from "../../src/telemetry/SpanBatch.js"
import { decodeTraces } from "./OtlpProtobuf.js"

const producer = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })

/** A span made and ended as the exporting tracer does, `fill` adding what the case needs. */
const ended = (
  exit: Exit.Exit<unknown, unknown>,
  fill: (span: RecordedSpan) => void = () => {},
  options: { readonly parent?: Tracer.AnySpan; readonly kind?: Tracer.SpanKind; readonly name?: string } = {}
): EndedSpan => {
  let result: EndedSpan | undefined
  const span = new RecordedSpan(
    options.name ?? "POST",
    Option.fromNullable(options.parent),
    Context.empty(),
    [],
    1_795_854_902_647_000_001n,
    options.kind ?? "client",
    (done) => result = done
  )
  fill(span)
  span.end(1_795_854_902_648_000_002n, exit)
  return result!
}

/** The protobuf JSON mapping of a double that JSON cannot hold as a number: `"NaN"`, `"Infinity"`, `"-Infinity"`. */
const nonFiniteAsText = (_key: string, value: unknown) =>
  typeof value === "number" && !Number.isFinite(value) ? String(value) : value

/** What a collector reads from `spanJson`, next to the OTLP object in the JSON mapping. */
const bothForms = (span: EndedSpan) => ({
  json: JSON.parse(spanJson(span)),
  object: JSON.parse(JSON.stringify(toOtlpSpan(span), nonFiniteAsText))
})

const protobufBatch = protobufBatches({
  resource: OtlpResource.make({ serviceName: "test" }),
  scope: { name: "hookrelay", version: "0.0.0" }
})

/** `span` written by the protobuf batch and decoded by OpenTelemetry's generated decoder (`OtlpProtobuf`). */
const protobufForm = (span: EndedSpan) => {
  const batch = protobufBatch()
  batch.add(span)
  const body = batch.body()
  if (body._tag !== "Uint8Array") throw new Error(`a ${body._tag} body`)
  const request = decodeTraces(body.body) as {
    readonly resourceSpans: ReadonlyArray<
      { readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<unknown> }> }
    >
  }
  batch.release()
  return request.resourceSpans[0]!.scopeSpans[0]!.spans[0]
}

/**
 * The OTLP object as the protobuf decoder gives it back: integers as exact decimal strings, an unset status without its
 * code (zero is protobuf's default, which is not written).
 */
const asDecoded = (span: OtlpSpan): unknown =>
  JSON.parse(
    JSON.stringify({ ...span, status: span.status.code === 0 ? {} : span.status }, (key, value) =>
      key === "intValue"
        ? BigInt(value).toString()
        : typeof value === "number" && !Number.isFinite(value)
        ? `non-finite ${value}`
        : value),
    // JSON has no NaN nor infinity: they cross as a marked text.
    (_, value) => typeof value === "string" && value.startsWith("non-finite ") ? Number(value.slice(11)) : value
  )

const cases: ReadonlyArray<readonly [string, () => EndedSpan]> = [
  ["a root span that succeeded", () => ended(Exit.void, () => {}, { kind: "internal", name: "hookrelay.claim" })],
  ["a child span with a link and every kind of attribute", () =>
    ended(Exit.void, (span) => {
      span.attribute("url.full", "https://hooks.example.com/in?q=\"a\"\\b")
      span.attribute("text", "ünïcödé ✓ \u2028 \n \u0000 😀")
      span.attribute("int", 8443)
      span.attribute("negative", -3)
      span.attribute("double", 0.25)
      span.attribute("huge", 2 ** 60)
      span.attribute("nan", Number.NaN)
      span.attribute("infinite", Number.NEGATIVE_INFINITY)
      span.attribute("doubles", [0.5, Number.NaN, Number.POSITIVE_INFINITY])
      span.attribute("bigint", 12n)
      span.attribute("yes", true)
      span.attribute("list", ["a", 1, false])
      span.attribute("object", { a: 1 })
      span.attribute("absent", undefined)
      span.addLinks([{ _tag: "SpanLink", span: producer, attributes: { why: "producer", n: 2 } }])
    }, { parent: producer })],
  ["a span with events", () =>
    ended(Exit.void, (span) => {
      span.event("retry scheduled", 1_795_854_902_647_500_000n, { delay: 30, ratio: Number.NaN })
      span.event("bare", 1_795_854_902_647_600_000n)
    }, { kind: "server" })],
  ["a span that failed with a plain value", () => ended(Exit.fail("HTTP 503"), () => {}, { parent: producer })],
  ["a span that failed with an Error", () => ended(Exit.fail(new TypeError("bad \"input\"")), () => {})],
  ["a span that died", () => ended(Exit.die(new Error("boom")), () => {}, { kind: "consumer" })],
  ["an interrupted span", () => ended(Exit.failCause(Cause.interrupt(FiberId.none)), () => {})],
  ["a producer span", () => ended(Exit.void, () => {}, { kind: "producer", name: "名前" })]
]

describe("a span as OTLP", () => {
  for (const [name, make] of cases) {
    it(`${name}: the JSON text is the OTLP object`, () => {
      const { json, object } = bothForms(make())
      expect(json).toStrictEqual(object)
    })

    it(`${name}: the protobuf bytes decode to the OTLP object`, () => {
      const span = make()
      expect(protobufForm(span)).toStrictEqual(asDecoded(toOtlpSpan(span)))
    })
  }

  it("carries ids, parent, kind and times as the OTLP/JSON mapping writes them", () => {
    const span = ended(Exit.void, (s) => s.attribute("server.port", 8443), { parent: producer })
    const { json } = bothForms(span)
    expect(json).toMatchObject({
      traceId: producer.traceId,
      spanId: span.spanId,
      parentSpanId: producer.spanId,
      name: "POST",
      kind: 3,
      startTimeUnixNano: "1795854902647000001",
      endTimeUnixNano: "1795854902648000002",
      attributes: [{ key: "server.port", value: { intValue: 8443 } }],
      status: { code: 0 }
    })
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/)
  })

  it("a root span gets a trace id of its own", () => {
    const [a, b] = [ended(Exit.void), ended(Exit.void)]
    expect(a.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(a.traceId).not.toBe(b.traceId)
    expect(bothForms(a).json.parentSpanId).toBeUndefined()
  })

  it("a failure given as a value is the status message; an Error adds the exception event", () => {
    const plain = bothForms(ended(Exit.fail("HTTP 503"))).json
    expect(plain.status).toStrictEqual({ code: 2, message: "HTTP 503" })
    expect(plain.events).toStrictEqual([])
    const thrown = bothForms(ended(Exit.fail(new TypeError("bad input")))).json
    expect(thrown.status).toStrictEqual({ code: 2, message: "bad input" })
    expect(thrown.events).toHaveLength(1)
    const attributes = Object.fromEntries(
      thrown.events[0].attributes.map((a: { key: string; value: { stringValue: string } }) => [
        a.key,
        a.value.stringValue
      ])
    )
    expect(attributes["exception.type"]).toBe("TypeError")
    expect(attributes["exception.message"]).toBe("bad input")
    expect(attributes["exception.stacktrace"]).toContain("bad input")
  })

  it("an attribute set again keeps its place and takes the new value", () => {
    const span = ended(Exit.void, (s) => {
      s.attribute("a", 1)
      s.attribute("b", 2)
      s.attribute("a", 3)
    })
    const expected = [{ key: "a", value: { intValue: 3 } }, { key: "b", value: { intValue: 2 } }]
    expect(bothForms(span).json.attributes).toStrictEqual(expected)
    expect(bothForms(span).object.attributes).toStrictEqual(expected)
    expect([...span.attributes]).toStrictEqual([["a", 3], ["b", 2]])
  })

  it("an interruption leaves the status unset", () => {
    const json = bothForms(ended(Exit.failCause(Cause.interrupt(FiberId.none)))).json
    expect(json.status).toStrictEqual({ code: 0 })
  })

  it("ends once: a second end changes nothing and exports nothing more", () => {
    let ends = 0
    const span = new RecordedSpan("x", Option.none(), Context.empty(), [], 1n, "internal", () => ends += 1)
    span.end(2n, Exit.void)
    span.end(3n, Exit.fail("late"))
    expect(ends).toBe(1)
    expect(span.status).toMatchObject({ _tag: "Ended", endTime: 2n })
  })
})

describe("a double that JSON cannot hold", () => {
  it("goes out as the protobuf JSON mapping's text, in attributes, lists and events alike", () => {
    const span = ended(Exit.void, (s) => {
      s.attribute("nan", Number.NaN)
      s.attribute("list", [Number.POSITIVE_INFINITY])
      s.event("e", 1n, { low: Number.NEGATIVE_INFINITY })
    })
    const json = JSON.parse(spanJson(span))
    expect(json.attributes).toStrictEqual([
      { key: "nan", value: { doubleValue: "NaN" } },
      { key: "list", value: { arrayValue: { values: [{ doubleValue: "Infinity" }] } } }
    ])
    expect(json.events[0].attributes).toStrictEqual([{ key: "low", value: { doubleValue: "-Infinity" } }])
  })
})
