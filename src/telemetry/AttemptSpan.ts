import { Context, Exit } from "effect"
import type { Clock, Option, Tracer } from "effect"
import type { AttemptTrace } from "../delivery/Attempt.js"
import type { AttemptRecord } from "../delivery/AttemptRecord.js"
import { RecordedSpan } from "./RecordedSpan.js"
import type { EndedSpan } from "./RecordedSpan.js"

/** An attempt's URL as OpenTelemetry's HTTP client conventions name it; user info (a credential) is left out. */
export interface UrlAttributes {
  readonly full: string
  readonly address: string
  readonly port: number
}

export const urlAttributes = (url: string): UrlAttributes => {
  const parsed = new URL(url)
  parsed.username = ""
  parsed.password = ""
  const port = parsed.port !== "" ? Number(parsed.port) : parsed.protocol === "https:" ? 443 : 80
  return { full: parsed.href, address: parsed.hostname, port }
}

/** Where attributes go: a span's `attribute`, or a writer of the export body (no closure made per attempt). */
export type PutAttribute<T> = (target: T, key: string, value: unknown) => void

/** The attributes of every attempt on one URL, first of an attempt's. */
export const putUrlAttributes = <T>(target: T, put: PutAttribute<T>, url: UrlAttributes) => {
  put(target, "http.request.method", "POST")
  put(target, "url.full", url.full)
  put(target, "server.address", url.address)
  put(target, "server.port", url.port)
}

/** The attributes of one attempt's own, after its URL's. */
export const putAttemptAttributes = <T>(
  target: T,
  put: PutAttribute<T>,
  attemptNumber: number,
  messageId: string,
  record: AttemptRecord
) => {
  put(target, "hookrelay.attempt.number", attemptNumber)
  put(target, "hookrelay.message.id", messageId)
  // The conventions count resends, the first request being 0; the record's number is 1-based.
  if (attemptNumber > 1) put(target, "http.request.resend_count", attemptNumber - 1)
  put(target, "hookrelay.attempt.outcome", record.outcome)
  if (record.status !== undefined) put(target, "http.response.status_code", record.status)
  // OpenTelemetry's `error.type`: the status code when there was an answer, else what ended the attempt.
  if (record.outcome !== "Success") {
    put(target, "error.type", record.status !== undefined ? String(record.status) : record.outcome)
  }
}

/** How an attempt's span ends: a failure's error is a string, which the exporter takes as the status message. */
export const attemptExit = (record: AttemptRecord): Exit.Exit<void, string> =>
  record.outcome === "Success" ? Exit.void : Exit.fail(record.error ?? `HTTP ${record.status ?? "error"}`)

const spanAttribute: PutAttribute<Tracer.Span> = (span, key, value) => span.attribute(key, value)

/** Where an attempt's span goes when its attempt ends, and the clock that times the end (one per `DeliverySpans`). */
export interface AttemptSpanSink {
  readonly clock: Clock.Clock
  readonly exportAttempt: (span: EndedAttemptSpan) => void
}

/**
 * A sampled delivery attempt's span, kept as the attempt's own fields rather than an attribute list (`DeliverySpans`
 * makes one per attempt): the protobuf body writes it directly (`SpanProtobuf.writeAttemptSpan`), its URL's attributes
 * encoded once per URL. `recorded` is the same span as the tracer's `RecordedSpan`, which the JSON body writes.
 */
export class AttemptSpan implements AttemptTrace {
  endTime = 0n
  record: AttemptRecord | undefined = undefined
  constructor(
    private readonly sink: AttemptSpanSink,
    readonly traceId: string,
    readonly spanId: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly links: ReadonlyArray<Tracer.SpanLink>,
    readonly startTime: bigint,
    readonly url: UrlAttributes,
    readonly messageId: string,
    readonly attemptNumber: number
  ) {}

  /** The attempt ended (`AttemptTrace`): the span ends now and is exported. */
  ended(record: AttemptRecord) {
    this.sink.exportAttempt(this.end(record, this.sink.clock.unsafeCurrentTimeNanos()))
  }

  /** Ends the span with the attempt's record; answers it ended, for the exporter. */
  end(record: AttemptRecord, endTime: bigint): EndedAttemptSpan {
    this.record = record
    this.endTime = endTime
    return this as EndedAttemptSpan
  }

  /** The span as the tracer would have recorded it: what the JSON body writes and the tests hold the protobuf to. */
  recorded(this: EndedAttemptSpan): EndedSpan {
    let ended: EndedSpan | undefined
    const span = new RecordedSpan(
      "POST",
      this.parent,
      Context.empty(),
      this.links,
      this.startTime,
      "client",
      (done) => ended = done,
      { traceId: this.traceId, spanId: this.spanId }
    )
    putUrlAttributes(span, spanAttribute, this.url)
    putAttemptAttributes(span, spanAttribute, this.attemptNumber, this.messageId, this.record)
    span.end(this.endTime, attemptExit(this.record))
    return ended!
  }
}

/** An attempt's span once its attempt has ended. */
export interface EndedAttemptSpan extends AttemptSpan {
  readonly record: AttemptRecord
}
