import { describe, expect, it } from "@effect/vitest"
import { Context, Option, Tracer } from "effect"
import { randomBytes } from "node:crypto"
import { isSampled, type Sampler, withSampler } from "../../src/telemetry/Sampler.js"

const parent = (sampled: boolean, traceId = "4bf92f3577b34da6a3ce929d0e0e4736") =>
  Option.some(Tracer.externalSpan({ traceId, spanId: "00f067aa0ba902b7", sampled }))

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

/** A tracer that records which spans it was asked for, with the options it was given; spans as Effect's own. */
const recording = () => {
  const made: Array<SpanOptions> = []
  const tracer = Tracer.make({
    span: (options) => {
      made.push(options)
      return new Tracer.NativeSpan(options)
    }
  })
  return { made, tracer }
}

/** A span asked of `tracer` as Effect asks it: sampled unless its parent is not. */
const span = (tracer: Tracer.Tracer, name: string, parent: Option.Option<Tracer.AnySpan>) =>
  tracer.span({
    name,
    parent,
    annotations: Context.empty(),
    links: [],
    startTime: 0n,
    kind: "server",
    root: Option.isNone(parent),
    sampled: Option.isNone(parent) || parent.value.sampled
  })

const randomTraceId = () => randomBytes(16).toString("hex")

describe("the trace sampler (OTEL_TRACES_SAMPLER)", () => {
  const parentBasedRatio = (root: number): Sampler => ({ parentBased: true, root })

  it("parent-based: a span with a parent follows its flag, whatever the root's rule", () => {
    for (const root of ["always", "never", 0, 1] as const) {
      expect(isSampled({ parentBased: true, root }, parent(true), "")).toBe(true)
      expect(isSampled({ parentBased: true, root }, parent(false), "")).toBe(false)
    }
  })

  it("a root span is recorded always, never, or in the ratio asked", () => {
    expect(isSampled({ parentBased: true, root: "always" }, Option.none(), randomTraceId())).toBe(true)
    expect(isSampled({ parentBased: true, root: "never" }, Option.none(), randomTraceId())).toBe(false)
    let recorded = 0
    for (let i = 0; i < 10_000; i++) if (isSampled(parentBasedRatio(0.1), Option.none(), randomTraceId())) recorded++
    expect(recorded).toBeGreaterThan(800)
    expect(recorded).toBeLessThan(1200)
  })

  it("traceidratio decides on the trace id, so every span of a trace gets one decision", () => {
    const sampler: Sampler = { parentBased: false, root: 0.5 }
    // The last 8 hex digits place the trace in [0, 1): 0x40000000 is 0.25, 0xc0000000 is 0.75.
    expect(isSampled(sampler, parent(false, "0000000000000000000000004000000a"), "")).toBe(true)
    expect(isSampled(sampler, parent(true, "000000000000000000000000c0000000"), "")).toBe(false)
    expect(isSampled(sampler, Option.none(), "0000000000000000000000004000000a")).toBe(true)
    expect(isSampled(sampler, Option.none(), "000000000000000000000000c0000000")).toBe(false)
  })

  it("a root span under a ratio is decided from the trace id the tracer gave it", () => {
    const { tracer } = recording()
    const sampled = withSampler(tracer, { parentBased: true, root: 0.5 })
    for (let i = 0; i < 200; i++) {
      const root = span(sampled, "root", Option.none())
      expect(root.sampled).toBe(parseInt(root.traceId.slice(-8), 16) / 0x1_0000_0000 < 0.5)
      // Its children follow it.
      expect(span(sampled, "child", Option.some(root)).sampled).toBe(root.sampled)
    }
  })

  it("an unsampled span is made not sampled, and carries its trace on, flagged not sampled", () => {
    const { made, tracer } = recording()
    const sampled = withSampler(tracer, { parentBased: true, root: "never" })
    const root = span(sampled, "root", Option.none())
    const child = span(sampled, "child", Option.some(root))
    const remote = span(sampled, "remote", parent(true))
    expect(made.map((options) => [options.name, options.sampled])).toStrictEqual([
      ["root", false],
      ["child", false],
      ["remote", true]
    ])
    expect(root.sampled).toBe(false)
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(root.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(child).toMatchObject({ sampled: false, traceId: root.traceId })
    expect(child.spanId).not.toBe(root.spanId)
    expect(remote.sampled).toBe(true)
  })

  it("always_on samples every span, and keeps the tracer's way of running fiber steps", () => {
    const { made, tracer } = recording()
    const always = withSampler(tracer, { parentBased: false, root: "always" })
    span(always, "a", Option.none())
    span(always, "b", parent(false))
    expect(made.map((options) => [options.name, options.sampled])).toStrictEqual([["a", true], ["b", true]])
    expect(always.context).toBe(tracer.context)
  })
})

describe("a span's parent", () => {
  /** The parent the exporting tracer is given for a span asked for under `parent`. */
  const parentGiven = (parent: Option.Option<Tracer.AnySpan>) => {
    const { made, tracer } = recording()
    span(withSampler(tracer, { parentBased: true, root: "always" }), "request", parent)
    return made[0]!.parent
  }
  const external = (traceId: string, spanId: string) => Option.some(Tracer.externalSpan({ traceId, spanId }))

  it("an external parent with W3C ids is kept", () => {
    const parent = external("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7")
    expect(parentGiven(parent)).toBe(parent)
  })

  it("one whose ids OTLP cannot carry (as `b3` headers give them, unchecked) is dropped: the span starts a trace", () => {
    for (
      const [traceId, spanId] of [
        ["463ac35c9f6413ad", "0020000000000001"], // a 64-bit b3 trace id
        ["4BF92F3577B34DA6A3CE929D0E0E4736", "00f067aa0ba902b7"],
        ["zz\"}]", "00f067aa0ba902b7"],
        ["4bf92f3577b34da6a3ce929d0e0e4736", "x".repeat(300)],
        ["00000000000000000000000000000000", "00f067aa0ba902b7"]
      ]
    ) {
      expect(parentGiven(external(traceId!, spanId!)), traceId).toStrictEqual(Option.none())
    }
  })
})
