import * as Otel from "@opentelemetry/api"
import { Context, Effect, Exit, Option } from "effect"
import type { Clock, Tracer } from "effect"
import type { AttemptInput } from "../delivery/Attempt.js"
import { withTraceparent } from "../delivery/Attempt.js"
import type { AttemptRecord } from "../delivery/AttemptRecord.js"
import type { DeliveryTracingShape } from "../delivery/DeliveryTracing.js"
import { formatTraceparent, parseTraceparent } from "../domain/TraceContext.js"
import type { StoreShape } from "../store/Model.js"

/** An attempt's URL as OpenTelemetry's HTTP client conventions name it; user info (a credential) is left out. */
interface UrlAttributes {
  readonly "url.full": string
  readonly "server.address": string
  readonly "server.port": number
}

const urlAttributes = (url: string): UrlAttributes => {
  const parsed = new URL(url)
  parsed.username = ""
  parsed.password = ""
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80
  return { "url.full": parsed.href, "server.address": parsed.hostname, "server.port": port }
}

const endAttempt = (span: Otel.Span, record: AttemptRecord) => {
  span.setAttribute("hookrelay.attempt.outcome", record.outcome)
  if (record.status !== undefined) span.setAttribute("http.response.status_code", record.status)
  if (record.outcome !== "Success") {
    // OpenTelemetry's `error.type`: the status code when there was an answer, else what ended the attempt.
    span.setAttribute("error.type", record.status !== undefined ? String(record.status) : record.outcome)
    span.setStatus({ code: Otel.SpanStatusCode.ERROR, message: record.error ?? `HTTP ${record.status ?? "error"}` })
  }
  span.end()
}

/** Where an attempt's span starts: its parent context and its link, both the producer's (the tracking request). */
interface ProducerStart {
  readonly context: Otel.Context
  readonly links: Array<Otel.Link>
}

const noProducer: ProducerStart = { context: Otel.ROOT_CONTEXT, links: [] }

/** The stored `traceparent` as the parent context of an attempt's span. */
const producerStart = (traceparent: string | undefined): ProducerStart => {
  const producer = parseTraceparent(traceparent)
  if (producer === undefined) return noProducer
  const context: Otel.SpanContext = {
    traceId: producer.traceId,
    spanId: producer.spanId,
    traceFlags: producer.sampled ? Otel.TraceFlags.SAMPLED : Otel.TraceFlags.NONE,
    isRemote: true
  }
  return { context: Otel.trace.setSpanContext(Otel.ROOT_CONTEXT, context), links: [{ context }] }
}

/**
 * Delivery's spans: a client span per attempt, child of the tracking request that made the job (and linked to it),
 * whose own context goes to the receiver as `traceparent`; a span per claim batch and per completion batch. Built only
 * when traces are exported. An attempt's span is made on the OpenTelemetry tracer itself (`otel`, the one the Effect
 * tracer wraps), its attributes given at its start: through the Effect tracer each attribute is a call and a map entry
 * of its own, on every message's path.
 */
export const makeDeliverySpans = (
  otel: Otel.Tracer,
  tracer: Tracer.Tracer,
  clock: Clock.Clock
): DeliveryTracingShape => {
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
    const attributes: Otel.Attributes = {
      "http.request.method": "POST",
      "url.full": url["url.full"],
      "server.address": url["server.address"],
      "server.port": url["server.port"],
      "hookrelay.attempt.number": input.attemptNumber,
      "hookrelay.message.id": input.messageId
    }
    // The conventions count resends, the first request being 0; the record's number is 1-based.
    if (input.attemptNumber > 1) attributes["http.request.resend_count"] = input.attemptNumber - 1
    // The SDK copies the links it is given, so the producer's one array serves every attempt.
    const span = otel.startSpan(
      "POST",
      { kind: Otel.SpanKind.CLIENT, attributes, links: lastStart.links },
      lastStart.context
    )
    const context = span.spanContext()
    const record = input.record
    return {
      ...input,
      endpoint: withTraceparent(
        input.endpoint,
        formatTraceparent({
          traceId: context.traceId,
          spanId: context.spanId,
          sampled: (context.traceFlags & 1) === 1
        })
      ),
      record: (attempted) => {
        endAttempt(span, attempted)
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
          attributes: { "hookrelay.batch.jobs": completions.length, "hookrelay.batch.attempts": attempts?.length ?? 0 }
        })
      )

  return {
    attempt,
    store: (inner) => ({ ...inner, claimDue: claimDue(inner.claimDue), completeMany: completeMany(inner.completeMany) })
  }
}
