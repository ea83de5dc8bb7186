import { Context, Effect, Exit, Option, Tracer } from "effect"
import type { Clock } from "effect"
import type { AttemptInput } from "../delivery/Attempt.js"
import { withTraceparent } from "../delivery/Attempt.js"
import type { DeliveryTracingShape } from "../delivery/DeliveryTracing.js"
import { formatTraceparent, parseTraceparent, traceparentPrefix } from "../domain/TraceContext.js"
import type { StoreShape } from "../store/Model.js"
import { AttemptSpan, urlAttributes } from "./AttemptSpan.js"
import type { AttemptSpanSink, EndedAttemptSpan, UrlAttributes } from "./AttemptSpan.js"
import { isSampled } from "./Sampler.js"
import type { Sampler } from "./Sampler.js"
import { newSpanId, newTraceId } from "./SpanIds.js"

/**
 * Where an attempt's span starts: its parent and its link, both the producer's (the tracking request), its trace, and
 * the start of the `traceparent` its receiver gets, when there is one.
 */
interface ProducerStart {
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly links: ReadonlyArray<Tracer.SpanLink>
  readonly traceId: string | undefined
  readonly prefix: string | undefined
}

const noProducer: ProducerStart = { parent: Option.none(), links: [], traceId: undefined, prefix: undefined }

/** The stored `traceparent` as the parent of an attempt's span. */
const producerStart = (traceparent: string | undefined): ProducerStart => {
  const producer = parseTraceparent(traceparent)
  if (producer === undefined) return noProducer
  const span = Tracer.externalSpan(producer)
  return {
    parent: Option.some(span),
    links: [{ _tag: "SpanLink", span, attributes: {} }],
    traceId: producer.traceId,
    prefix: traceparentPrefix(producer.traceId)
  }
}

export interface DeliverySpansOptions {
  /** The tracer the claim batches' spans are made on: the one the fibers use, whose span each completion batch is. */
  readonly tracer: Tracer.Tracer
  /** Which attempts are recorded: the tracer's own choice (`Sampler`), made here for attempts. */
  readonly sampler: Sampler
  /** Where a recorded attempt's span goes when it ends (`SpanExporter`). */
  readonly exportAttempt: (span: EndedAttemptSpan) => void
  readonly clock: Clock.Clock
}

/**
 * Delivery's spans: a client span per attempt, child of the tracking request that made the job (and linked to it),
 * whose own context goes to the receiver as `traceparent`; a span per claim batch and per completion batch on the
 * tracer. Built only when traces are exported.
 *
 * An attempt is the one span per message: it is no tracer span but an `AttemptSpan`, made and exported here, and an
 * attempt the sampler leaves out makes no span object at all, only the ids its `traceparent` carries. Its attributes,
 * kind and ids are those a tracer span would have had (`AttemptSpan.recorded`).
 */
export const makeDeliverySpans = (options: DeliverySpansOptions): DeliveryTracingShape => {
  const { clock, sampler, tracer } = options
  const sink: AttemptSpanSink = { clock, exportAttempt: options.exportAttempt }
  // Per configured URL, not per attempt.
  const urls = new Map<string, UrlAttributes>()
  const attributesOf = (url: string) => {
    let attributes = urls.get(url)
    if (attributes === undefined) urls.set(url, attributes = urlAttributes(url))
    return attributes
  }

  // The jobs of one tracking request share its `traceparent` and are claimed together: the last one parsed is kept.
  let lastTraceparent: string | undefined
  let lastStart = noProducer

  const attempt = (input: AttemptInput, traceparent: string | undefined): AttemptInput => {
    if (traceparent !== lastTraceparent) {
      lastStart = producerStart(traceparent)
      lastTraceparent = traceparent
    }
    const sampled = isSampled(sampler, lastStart.parent)
    const traceId = lastStart.traceId ?? newTraceId()
    const spanId = newSpanId()
    const header = formatTraceparent({ traceId, spanId, sampled }, lastStart.prefix)
    const trace = sampled
      ? new AttemptSpan(
        sink,
        traceId,
        spanId,
        lastStart.parent,
        lastStart.links,
        clock.unsafeCurrentTimeNanos(),
        attributesOf(input.endpoint.url),
        input.messageId,
        input.attemptNumber
      )
      : undefined
    // The fields in `Deliver`'s order, not a spread: one object shape for the attempt's code, traced or not.
    return {
      jobId: input.jobId,
      messageId: input.messageId,
      endpoint: withTraceparent(input.endpoint, header),
      attemptNumber: input.attemptNumber,
      record: input.record,
      trace
    }
  }

  // A claim that found nothing is no batch: its span is made, backdated, only when it took jobs.
  const claimDue = (inner: StoreShape["claimDue"]): StoreShape["claimDue"] => (owner, now, limit, leaseMs, options) =>
    Effect.suspend(() => {
      const startTime = clock.unsafeCurrentTimeNanos()
      return Effect.tap(inner(owner, now, limit, leaseMs, options), (jobs) => {
        if (jobs.length === 0) return
        const span = tracer.span("hookrelay.claim", Option.none(), Context.empty(), [], startTime, "internal")
        span.attribute("hookrelay.batch.jobs", jobs.length)
        span.attribute("hookrelay.claim.limit", limit)
        span.end(clock.unsafeCurrentTimeNanos(), Exit.void)
      })
    })

  // Made on the tracer, not by `Effect.withSpan`: that one copies the fiber's context and fiber refs for the span it
  // makes current, which nothing under a completion reads.
  const completeMany =
    (inner: StoreShape["completeMany"]): StoreShape["completeMany"] => (owner, completions, attempts) =>
      Effect.suspend(() => {
        const span = tracer.span(
          "hookrelay.complete",
          Option.none(),
          Context.empty(),
          [],
          clock.unsafeCurrentTimeNanos(),
          "internal"
        )
        span.attribute("hookrelay.batch.jobs", completions.length)
        span.attribute("hookrelay.batch.attempts", attempts?.length ?? 0)
        return Effect.onExit(
          inner(owner, completions, attempts),
          (exit) => Effect.sync(() => span.end(clock.unsafeCurrentTimeNanos(), exit))
        )
      })

  return {
    attempt,
    store: (inner) => ({ ...inner, claimDue: claimDue(inner.claimDue), completeMany: completeMany(inner.completeMany) })
  }
}
