import { describe, expect, it } from "@effect/vitest"
import { Context, Option, Tracer } from "effect"
import { isSampled, type Sampler, withSampler } from "../../src/telemetry/Sampler.js"

const parent = (sampled: boolean, traceId = "4bf92f3577b34da6a3ce929d0e0e4736") =>
  Option.some(Tracer.externalSpan({ traceId, spanId: "00f067aa0ba902b7", sampled }))

/** A tracer that records which spans it was asked for. */
const recording = () => {
  const made: Array<string> = []
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      made.push(name)
      return {
        _tag: "Span",
        name,
        spanId: "1111111111111111",
        traceId: "22222222222222222222222222222222",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes: new Map(),
        links,
        sampled: true,
        kind,
        end: () => {},
        attribute: () => {},
        event: () => {},
        addLinks: () => {}
      }
    },
    context: (f) => f()
  })
  return { made, tracer }
}

describe("the trace sampler (OTEL_TRACES_SAMPLER)", () => {
  const parentBasedRatio = (root: number): Sampler => ({ parentBased: true, root })

  it("parent-based: a span with a parent follows its flag, whatever the root's rule", () => {
    for (const root of ["always", "never", 0, 1] as const) {
      expect(isSampled({ parentBased: true, root }, parent(true))).toBe(true)
      expect(isSampled({ parentBased: true, root }, parent(false))).toBe(false)
    }
  })

  it("a root span is recorded always, never, or in the ratio asked", () => {
    expect(isSampled({ parentBased: true, root: "always" }, Option.none())).toBe(true)
    expect(isSampled({ parentBased: true, root: "never" }, Option.none())).toBe(false)
    let recorded = 0
    for (let i = 0; i < 10_000; i++) if (isSampled(parentBasedRatio(0.1), Option.none())) recorded++
    expect(recorded).toBeGreaterThan(800)
    expect(recorded).toBeLessThan(1200)
  })

  it("traceidratio decides on the trace id, so every span of a trace gets one decision", () => {
    const sampler: Sampler = { parentBased: false, root: 0.5 }
    // The last 8 hex digits place the trace in [0, 1): 0x40000000 is 0.25, 0xc0000000 is 0.75.
    expect(isSampled(sampler, parent(false, "0000000000000000000000004000000a"))).toBe(true)
    expect(isSampled(sampler, parent(true, "000000000000000000000000c0000000"))).toBe(false)
  })

  it("an unsampled span is not made on the exporting tracer, and carries its trace on, flagged not sampled", () => {
    const { made, tracer } = recording()
    const sampled = withSampler(tracer, { parentBased: true, root: "never" }, (f) => f())
    const root = sampled.span("root", Option.none(), Context.empty(), [], 0n, "server")
    const child = sampled.span("child", Option.some(root), Context.empty(), [], 0n, "client")
    const remote = sampled.span("remote", parent(true), Context.empty(), [], 0n, "server")
    expect(made).toStrictEqual(["remote"])
    expect(root.sampled).toBe(false)
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(root.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(child).toMatchObject({ sampled: false, traceId: root.traceId })
    expect(child.spanId).not.toBe(root.spanId)
    expect(remote.sampled).toBe(true)
  })

  it("always_on makes every span on the exporting tracer, and runs fiber steps with the context it is given", () => {
    const { made, tracer } = recording()
    const context: Tracer.Tracer["context"] = (f) => f()
    const always = withSampler(tracer, { parentBased: false, root: "always" }, context)
    always.span("a", Option.none(), Context.empty(), [], 0n, "server")
    always.span("b", parent(false), Context.empty(), [], 0n, "server")
    expect(made).toStrictEqual(["a", "b"])
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared, not called
    expect(always.context).toBe(context)
  })
})

describe("a span's parent", () => {
  /** The parent the exporting tracer is given for a span asked for under `parent`. */
  const parentGiven = (parent: Option.Option<Tracer.AnySpan>) => {
    let given: Option.Option<Tracer.AnySpan> | undefined
    const inner = Tracer.make({
      span: (name, parent, context, links, startTime, kind) => {
        given = parent
        return recording().tracer.span(name, parent, context, links, startTime, kind)
      },
      context: (f) => f()
    })
    withSampler(inner, { parentBased: true, root: "always" }, (f) => f()).span(
      "request",
      parent,
      Context.empty(),
      [],
      1n,
      "server"
    )
    return given
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
