import { Context, Effect, Exit, Option, Tracer } from "effect"
import type { Clock } from "effect"
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

const endAttempt = (span: Tracer.Span, record: AttemptRecord, endTime: bigint) => {
  span.attribute("hookrelay.attempt.outcome", record.outcome)
  span.attribute("hookrelay.attempt.duration_ms", record.durationMs)
  if (record.status !== undefined) span.attribute("http.response.status_code", record.status)
  if (record.outcome === "Success") return span.end(endTime, Exit.void)
  // OpenTelemetry's `error.type`: the status code when there was an answer, else what ended the attempt.
  span.attribute("error.type", record.status !== undefined ? String(record.status) : record.outcome)
  span.end(endTime, Exit.fail(record.error ?? `HTTP ${record.status ?? "error"}`))
}

/**
 * Delivery's spans over a tracer (the OpenTelemetry one): a client span per attempt, child of the tracking request that
 * made the job (and linked to it), whose own context goes to the receiver as `traceparent`; a span per claim batch
 * and per completion batch. Built only when traces are exported.
 */
export const makeDeliverySpans = (tracer: Tracer.Tracer, clock: Clock.Clock): DeliveryTracingShape => {
  // Per configured URL, not per attempt.
  const urls = new Map<string, UrlAttributes>()
  const attributesOf = (url: string) => {
    let attributes = urls.get(url)
    if (attributes === undefined) urls.set(url, attributes = urlAttributes(url))
    return attributes
  }

  const attempt = (input: AttemptInput, traceparent: string | undefined): AttemptInput => {
    const producer = parseTraceparent(traceparent)
    const parent = producer === undefined ? Option.none() : Option.some(Tracer.externalSpan(producer))
    const links: Array<Tracer.SpanLink> = Option.isSome(parent)
      ? [{ _tag: "SpanLink", span: parent.value, attributes: { "hookrelay.link": "tracking request" } }]
      : []
    const span = tracer.span("POST", parent, Context.empty(), links, clock.unsafeCurrentTimeNanos(), "client")
    span.attribute("http.request.method", "POST")
    for (const [key, value] of Object.entries(attributesOf(input.endpoint.url))) span.attribute(key, value)
    // The conventions count resends, the first request being 0; the record's number is 1-based.
    if (input.attemptNumber > 1) span.attribute("http.request.resend_count", input.attemptNumber - 1)
    span.attribute("hookrelay.attempt.number", input.attemptNumber)
    span.attribute("hookrelay.job.id", input.jobId)
    span.attribute("hookrelay.message.id", input.messageId)
    const record = input.record
    return {
      ...input,
      endpoint: withTraceparent(
        input.endpoint,
        formatTraceparent({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled })
      ),
      record: (attempted) => {
        endAttempt(span, attempted, clock.unsafeCurrentTimeNanos())
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
