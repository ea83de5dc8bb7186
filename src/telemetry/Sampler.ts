import { Config, Option, Schema, Tracer } from "effect"
import { hasW3cIds } from "../domain/TraceContext.js"
import { checked, oneOfConfig } from "./ConfigChoices.js"

/**
 * Which traces are recorded, from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the specification's built-in
 * samplers). `parentBased`: a span with a parent follows the parent's decision (a client's `traceparent` flag, a
 * job's stored one), and `root` decides only for spans without one.
 */
export interface Sampler {
  readonly parentBased: boolean
  /** A root span is always, never, or with this probability (of its trace id) recorded. */
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

const ratio = Config.withDefault(
  checked(
    "OTEL_TRACES_SAMPLER_ARG",
    Schema.NumberFromString,
    (p) => p >= 0 && p <= 1,
    "must be a probability from 0 to 1"
  ),
  1
)

export const samplerConfig: Config.Config<Sampler> = Config.all([
  oneOfConfig("OTEL_TRACES_SAMPLER", names, "parentbased_always_on"),
  ratio
]).pipe(Config.map(([name, probability]): Sampler => ({
  parentBased: name.startsWith("parentbased_"),
  root: name.endsWith("always_on") ? "always" : name.endsWith("always_off") ? "never" : probability
})))

/** A trace id's place in [0, 1): its last 8 hex digits, so that every span of a trace gets one decision. */
const traceIdPoint = (traceId: string) => parseInt(traceId.slice(-8), 16) / 0x1_0000_0000

/**
 * Whether a span under `parent` (else a root span of the trace `rootTraceId`) is recorded: the specification's
 * parent-based and trace-id-ratio samplers, the ratio decided from the trace id (the same for every span of a trace),
 * not at random.
 */
export const isSampled = (sampler: Sampler, parent: Option.Option<Tracer.AnySpan>, rootTraceId: string): boolean => {
  if (sampler.parentBased && Option.isSome(parent)) return parent.value.sampled
  if (sampler.root === "always") return true
  if (sampler.root === "never") return false
  return traceIdPoint(Option.isSome(parent) ? parent.value.traceId : rootTraceId) < sampler.root
}

/**
 * The parent a span may have: not an external one whose ids W3C Trace Context and OTLP cannot carry. The HTTP server's
 * tracing takes a request's `b3` or `x-b3-*` headers as they come, unchecked (a 64-bit trace id, quotes, any
 * length); such a request's span starts a trace of its own instead, so no exported body is malformed by a client.
 */
export const usableParent = (parent: Option.Option<Tracer.AnySpan>): Option.Option<Tracer.AnySpan> => {
  if (Option.isNone(parent) || parent.value._tag === "Span" || parent.value === lastUsable) return parent
  if (!hasW3cIds(parent.value)) return Option.none()
  // The attempts of one tracking request share its external span: checked once for them all.
  lastUsable = parent.value
  return parent
}
let lastUsable: Tracer.AnySpan | undefined

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

/**
 * `tracer` (the OTLP tracer, which exports the spans made sampled) deciding with `sampler` which spans are sampled.
 * An unsampled span still has ids: its children and a receiver's `traceparent` carry them, flagged not sampled.
 */
export const withSampler = (tracer: Tracer.Tracer, sampler: Sampler): Tracer.Tracer =>
  Tracer.make({
    span(options: SpanOptions) {
      const parent = usableParent(options.parent)
      // Not sampled under a parent that is sampled (or none): a trace level below the minimum said so; that stays.
      const belowLevel = !options.sampled && !(Option.isSome(options.parent) && !options.parent.value.sampled)
      if (belowLevel) return tracer.span({ ...options, parent })
      if (Option.isSome(parent) || typeof sampler.root !== "number") {
        return tracer.span({ ...options, parent, sampled: isSampled(sampler, parent, "") })
      }
      // A root span's trace id is the tracer's to make: the span is made first, its decision taken from that id.
      const span = tracer.span({ ...options, parent, sampled: true })
      if (!isSampled(sampler, parent, span.traceId)) (span as { sampled: boolean }).sampled = false
      return span
    },
    ...(tracer.context === undefined ? {} : { context: tracer.context })
  })
