import { Context, Effect, Exit, Option, Tracer } from "effect"
import type { Clock } from "effect"
import type { AttemptInput, AttemptTrace } from "../delivery/Attempt.js"
import { withTraceparent } from "../delivery/Attempt.js"
import type { DeliveryTracingShape } from "../delivery/DeliveryTracing.js"
import type { AttemptRecord } from "../domain/AttemptRecord.js"
import { formatTraceparent, parseTraceparent, traceparentPrefix } from "../domain/TraceContext.js"
import type { OutboxShape } from "../store/Outbox.js"

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

/** The attributes an attempt's span ends with, after its URL's. */
const putAttemptAttributes = (span: Tracer.Span, attemptNumber: number, messageId: string, record: AttemptRecord) => {
  span.attribute("hookrelay.attempt.number", attemptNumber)
  span.attribute("hookrelay.message.id", messageId)
  // The conventions count resends, the first request being 0; the record's number is 1-based.
  if (attemptNumber > 1) span.attribute("http.request.resend_count", attemptNumber - 1)
  span.attribute("hookrelay.attempt.outcome", record.outcome)
  if (record.statusCode !== null) span.attribute("http.response.status_code", record.statusCode)
  // OpenTelemetry's `error.type`: the status code when there was an answer, else what ended the attempt.
  if (record.outcome !== "success") {
    span.attribute("error.type", record.statusCode !== null ? String(record.statusCode) : record.outcome)
  }
}

/** How an attempt's span ends: a failure's error is a string, which the exporter takes as the status message. */
const attemptExit = (record: AttemptRecord): Exit.Exit<void, string> =>
  record.outcome === "success" ? Exit.void : Exit.fail(record.error ?? `HTTP ${record.statusCode ?? "error"}`)

/** Where an attempt's span starts: its parent and link (the tracking request's) and its `traceparent`'s start. */
interface ProducerStart {
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly link: Tracer.SpanLink | undefined
  readonly prefix: string | undefined
}

const noProducer: ProducerStart = { parent: Option.none(), link: undefined, prefix: undefined }

/** The stored `traceparent` as the parent of an attempt's span. */
const producerStart = (traceparent: string | undefined): ProducerStart => {
  const producer = parseTraceparent(traceparent)
  if (producer === undefined) return noProducer
  const span = Tracer.externalSpan(producer)
  return { parent: Option.some(span), link: { span, attributes: {} }, prefix: traceparentPrefix(producer.traceId) }
}

/**
 * Delivery's spans, made on `tracer` (Effect's, the OTLP tracer behind the sampler): a client span `POST` per attempt,
 * child of the tracking request that made the job (and linked to it), whose own context goes to the receiver as
 * `traceparent`; a span per claim batch and per completion batch. Built only when traces are exported.
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
    const { link, parent, prefix } = lastStart
    const span = tracer.span({
      name: "POST",
      parent,
      annotations: Context.empty(),
      links: link === undefined ? [] : [link],
      startTime: clock.currentTimeNanosUnsafe(),
      kind: "client",
      root: Option.isNone(parent),
      sampled: Option.isNone(parent) || parent.value.sampled
    })
    const header = formatTraceparent(
      { traceId: span.traceId, spanId: span.spanId, sampled: span.sampled },
      prefix ?? traceparentPrefix(span.traceId)
    )
    let trace: AttemptTrace | undefined
    // A span the sampler leaves out is never exported: it gets no attributes and is not ended.
    if (span.sampled) {
      const url = attributesOf(input.endpoint.url)
      span.attribute("http.request.method", "POST")
      span.attribute("url.full", url.full)
      span.attribute("server.address", url.address)
      span.attribute("server.port", url.port)
      const { attemptNumber, messageId } = input
      trace = {
        ended: (record) => {
          putAttemptAttributes(span, attemptNumber, messageId, record)
          span.end(clock.currentTimeNanosUnsafe(), attemptExit(record))
        }
      }
    }
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

  const batchSpan = (name: string, startTime: bigint) =>
    tracer.span({
      name,
      parent: Option.none(),
      annotations: Context.empty(),
      links: [],
      startTime,
      kind: "internal",
      root: true,
      sampled: true
    })

  // A claim that found nothing is no batch: its span is made, backdated, only when it took jobs.
  const claimDue = (inner: OutboxShape["claimDue"]): OutboxShape["claimDue"] => (owner, now, limit, leaseMs, options) =>
    Effect.suspend(() => {
      const startTime = clock.currentTimeNanosUnsafe()
      return Effect.map(inner(owner, now, limit, leaseMs, options), (jobs) => {
        if (jobs.length === 0) return jobs
        const span = batchSpan("hookrelay.claim", startTime)
        span.attribute("hookrelay.batch.jobs", jobs.length)
        span.attribute("hookrelay.claim.limit", limit)
        span.end(clock.currentTimeNanosUnsafe(), Exit.void)
        return jobs
      })
    })

  // Made on the tracer, not by `Effect.withSpan`: nothing under a completion reads the span as its parent.
  const completeMany =
    (inner: OutboxShape["completeMany"]): OutboxShape["completeMany"] => (owner, completions, attempts) =>
      Effect.suspend(() => {
        const span = batchSpan("hookrelay.complete", clock.currentTimeNanosUnsafe())
        span.attribute("hookrelay.batch.jobs", completions.length)
        span.attribute("hookrelay.batch.attempts", attempts?.length ?? 0)
        return Effect.onExit(
          inner(owner, completions, attempts),
          (exit) => Effect.sync(() => span.end(clock.currentTimeNanosUnsafe(), exit))
        )
      })

  return {
    attempt,
    outbox: (inner) => ({
      ...inner,
      claimDue: claimDue(inner.claimDue),
      completeMany: completeMany(inner.completeMany)
    })
  }
}
