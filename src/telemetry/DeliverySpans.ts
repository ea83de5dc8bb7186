import { Context, Effect, Exit, Option, Tracer } from "effect"
import type { Clock } from "effect"
import type { AttemptInput } from "../delivery/Attempt.js"
import { withTraceparent } from "../delivery/Attempt.js"
import type { AttemptRecord } from "../delivery/AttemptRecord.js"
import type { DeliveryTracingShape } from "../delivery/DeliveryTracing.js"
import { formatTraceparent, parseTraceparent, traceparentPrefix } from "../domain/TraceContext.js"
import type { StoreShape } from "../store/Model.js"

/** An attempt's URL as OpenTelemetry's HTTP client conventions name it; user info (a credential) is left out. */
interface UrlAttributes {
  readonly full: string
  readonly address: string
  readonly port: number
}

const urlAttributes = (url: string): UrlAttributes => {
  const parsed = new URL(url)
  parsed.username = ""
  parsed.password = ""
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80
  return { full: parsed.href, address: parsed.hostname, port }
}

/**
 * An attempt's attributes, all set when the attempt ends: until then the span holds no attributes, so one still in
 * flight when a young-generation collection runs has little to be copied.
 */
const setAttempt = (span: Tracer.Span, input: AttemptInput, url: UrlAttributes, record: AttemptRecord) => {
  span.attribute("http.request.method", "POST")
  span.attribute("url.full", url.full)
  span.attribute("server.address", url.address)
  span.attribute("server.port", url.port)
  span.attribute("hookrelay.attempt.number", input.attemptNumber)
  span.attribute("hookrelay.message.id", input.messageId)
  // The conventions count resends, the first request being 0; the record's number is 1-based.
  if (input.attemptNumber > 1) span.attribute("http.request.resend_count", input.attemptNumber - 1)
  span.attribute("hookrelay.attempt.outcome", record.outcome)
  if (record.status !== undefined) span.attribute("http.response.status_code", record.status)
  // OpenTelemetry's `error.type`: the status code when there was an answer, else what ended the attempt.
  if (record.outcome !== "Success") {
    span.attribute("error.type", record.status !== undefined ? String(record.status) : record.outcome)
  }
}

/** An attempt's end; its attributes only on a sampled span (an unsampled one keeps none). */
const endAttempt = (
  span: Tracer.Span,
  input: AttemptInput,
  url: UrlAttributes,
  record: AttemptRecord,
  endTime: bigint
) => {
  if (span.sampled) setAttempt(span, input, url, record)
  if (record.outcome === "Success") return span.end(endTime, Exit.void)
  // A failure whose error is a string: the exporter takes it as the status message as it is.
  span.end(endTime, Exit.fail(record.error ?? `HTTP ${record.status ?? "error"}`))
}

/**
 * Where an attempt's span starts: its parent and its link, both the producer's (the tracking request), and the start
 * of the `traceparent` its receiver gets (the producer's trace), when there is one.
 */
interface ProducerStart {
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly links: ReadonlyArray<Tracer.SpanLink>
  readonly prefix: string | undefined
}

const noProducer: ProducerStart = { parent: Option.none(), links: [], prefix: undefined }

/** The stored `traceparent` as the parent of an attempt's span. */
const producerStart = (traceparent: string | undefined): ProducerStart => {
  const producer = parseTraceparent(traceparent)
  if (producer === undefined) return noProducer
  const span = Tracer.externalSpan(producer)
  return {
    parent: Option.some(span),
    links: [{ _tag: "SpanLink", span, attributes: {} }],
    prefix: traceparentPrefix(producer.traceId)
  }
}

/**
 * Delivery's spans on the Effect tracer: a client span per attempt, child of the tracking request that made the job
 * (and linked to it), whose own context goes to the receiver as `traceparent`; a span per claim batch and per
 * completion batch. Built only when traces are exported.
 */
export const makeDeliverySpans = (tracer: Tracer.Tracer, clock: Clock.Clock): DeliveryTracingShape => {
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
    const url = attributesOf(input.endpoint.url)
    const span = tracer.span(
      "POST",
      lastStart.parent,
      Context.empty(),
      lastStart.links,
      clock.unsafeCurrentTimeNanos(),
      "client"
    )
    const record = input.record
    // The fields in `Deliver`'s order, not a spread: one object shape for the attempt's code, traced or not.
    return {
      jobId: input.jobId,
      messageId: input.messageId,
      endpoint: withTraceparent(input.endpoint, formatTraceparent(span, lastStart.prefix)),
      attemptNumber: input.attemptNumber,
      record: (attempted) => {
        endAttempt(span, input, url, attempted, clock.unsafeCurrentTimeNanos())
        return record(attempted)
      }
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

  const completeMany =
    (inner: StoreShape["completeMany"]): StoreShape["completeMany"] => (owner, completions, attempts) =>
      inner(owner, completions, attempts).pipe(
        Effect.withSpan("hookrelay.complete", {
          kind: "internal",
          root: true,
          // A call-site stack is an `Error` built on every batch.
          captureStackTrace: false,
          attributes: { "hookrelay.batch.jobs": completions.length, "hookrelay.batch.attempts": attempts?.length ?? 0 }
        })
      )

  return {
    attempt,
    store: (inner) => ({ ...inner, claimDue: claimDue(inner.claimDue), completeMany: completeMany(inner.completeMany) })
  }
}
