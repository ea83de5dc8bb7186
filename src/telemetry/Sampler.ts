import { Config, Option, Tracer } from "effect"
import type { Context, Exit } from "effect"
import { hasW3cIds } from "../domain/TraceContext.js"
import { oneOfConfig } from "./ConfigChoices.js"
import { newSpanId, newTraceId } from "./SpanIds.js"

/**
 * Which traces are recorded, from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the specification's built-in
 * samplers). `parentBased`: a span with a parent follows the parent's decision (a client's `traceparent` flag, a
 * job's stored one), and `root` decides only for spans without one.
 */
export interface Sampler {
  readonly parentBased: boolean
  /** A root span is always, never, or with this probability recorded. */
  readonly root: "always" | "never" | number
}

const names = [
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
  "always_on",
  "always_off",
  "traceidratio"
] as const

const ratio = Config.nested(
  Config.number().pipe(
    Config.validate({ message: "must be a probability from 0 to 1", validation: (p) => p >= 0 && p <= 1 })
  ),
  "OTEL_TRACES_SAMPLER_ARG"
).pipe(Config.withDefault(1))

export const samplerConfig: Config.Config<Sampler> = Config.all([
  oneOfConfig("OTEL_TRACES_SAMPLER", names, "parentbased_always_on"),
  ratio
]).pipe(Config.map(([name, probability]) => ({
  parentBased: name.startsWith("parentbased_"),
  root: name.endsWith("always_on") ? "always" : name.endsWith("always_off") ? "never" : probability
})))

/** A trace id's place in [0, 1): its last 8 hex digits, so that every span of a trace gets one decision. */
const traceIdPoint = (traceId: string) => parseInt(traceId.slice(-8), 16) / 0x1_0000_0000

/** Whether a span under `parent` is recorded. */
export const isSampled = (sampler: Sampler, parent: Option.Option<Tracer.AnySpan>): boolean => {
  if (sampler.parentBased && Option.isSome(parent)) return parent.value.sampled
  if (sampler.root === "always") return true
  if (sampler.root === "never") return false
  return Option.isSome(parent) ? traceIdPoint(parent.value.traceId) < sampler.root : Math.random() < sampler.root
}

// An unsampled span keeps no attribute: one empty map serves them all.
const noAttributes: ReadonlyMap<string, unknown> = new Map()

/**
 * A span that is not recorded: it has ids (its children and a receiver's `traceparent` carry them, flagged not
 * sampled) and keeps nothing.
 */
class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly spanId = newSpanId()
  readonly traceId: string
  readonly attributes: ReadonlyMap<string, unknown> = noAttributes
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    readonly links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind
  ) {
    this.traceId = Option.isSome(parent) ? parent.value.traceId : newTraceId()
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute() {}
  event() {}
  addLinks() {}
}

/**
 * The parent a span may have: not an external one whose ids W3C Trace Context and OTLP cannot carry. The HTTP server's
 * tracing takes a request's `b3` or `x-b3-*` headers as they come, unchecked (a 64-bit trace id, quotes, any
 * length); such a request's span starts a trace of its own instead, so no exported body is malformed by a client.
 */
export const usableParent = (parent: Option.Option<Tracer.AnySpan>): Option.Option<Tracer.AnySpan> => {
  if (parent._tag === "None" || parent.value._tag === "Span" || parent.value === lastUsable) return parent
  if (!hasW3cIds(parent.value)) return Option.none()
  // The attempts of one tracking request share its external span: checked once for them all.
  lastUsable = parent.value
  return parent
}
let lastUsable: Tracer.AnySpan | undefined

/**
 * `tracer` recording only the spans `sampler` chooses; the others are `UnsampledSpan`s. The fiber runtime calls a
 * tracer's `context` around every step of every fiber: `context` is the one of the tracer being replaced (Effect's
 * own, which runs the step as it is, as the span exporter's does), so that call stays the one function it was.
 */
export const withSampler = (
  tracer: Tracer.Tracer,
  sampler: Sampler,
  context: Tracer.Tracer["context"]
): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, spanContext, links, startTime, kind, options) => {
      const usable = usableParent(parent)
      return isSampled(sampler, usable)
        ? tracer.span(name, usable, spanContext, links, startTime, kind, options)
        : new UnsampledSpan(name, usable, spanContext, links, startTime, kind)
    },
    context
  })
