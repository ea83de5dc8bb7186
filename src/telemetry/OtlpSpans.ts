import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { Cause, Option } from "effect"
import type { Exit, Tracer } from "effect"
import type { EndedSpan } from "./RecordedSpan.js"

/**
 * A span as OTLP carries it (`opentelemetry.proto.trace.v1.Span` in its JSON mapping). `spanJson` writes the same
 * span as text and `SpanProtobuf.writeSpan` as protobuf; the tests hold both writers to this object.
 */
export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<OtlpResource.KeyValue>
  readonly events: ReadonlyArray<OtlpEvent>
  readonly status: OtlpStatus
  readonly links: ReadonlyArray<OtlpLink>
}

export interface OtlpEvent {
  readonly name: string
  readonly timeUnixNano: string
  readonly attributes: ReadonlyArray<OtlpResource.KeyValue>
}

interface OtlpLink {
  readonly traceId: string
  readonly spanId: string
  readonly attributes: ReadonlyArray<OtlpResource.KeyValue>
}

/** Unset (0) or Error (2): a span that succeeded leaves its status unset, as the specification asks of libraries. */
export interface OtlpStatus {
  readonly code: 0 | 2
  readonly message?: string
}

export const kinds: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

export const unset: OtlpStatus = { code: 0 }

// Most spans end so: one object for them all.
const succeeded = { status: unset, exception: undefined } as const

/** How a span ended: its status and, when it failed with an exception, the specification's `exception` event. */
export const outcome = (exit: Exit.Exit<unknown, unknown>, endTime: bigint): {
  readonly status: OtlpStatus
  readonly exception: OtlpEvent | undefined
} => {
  // An interruption (a client that went away, a shutdown) is not the span's failure.
  if (exit._tag === "Success" || Cause.isInterruptedOnly(exit.cause)) return succeeded
  const first = Cause.prettyErrors(exit.cause)[0]
  const status: OtlpStatus = { code: 2, message: first?.message ?? "failed" }
  // A failure given as a plain value (an attempt's "HTTP 503") is a status message, not an exception.
  if (first === undefined || !(Cause.squash(exit.cause) instanceof Error)) return { status, exception: undefined }
  return {
    status,
    exception: {
      name: "exception",
      timeUnixNano: String(endTime),
      attributes: [
        { key: "exception.type", value: { stringValue: first.name } },
        { key: "exception.message", value: { stringValue: first.message } },
        { key: "exception.stacktrace", value: { stringValue: Cause.pretty(exit.cause, { renderErrorCause: true }) } }
      ]
    }
  }
}

const attributesOf = (record: Readonly<Record<string, unknown>> | undefined) =>
  record === undefined ? [] : OtlpResource.entriesToAttributes(Object.entries(record))

export const eventsOf = (span: EndedSpan, exception: OtlpEvent | undefined): Array<OtlpEvent> => {
  const events: Array<OtlpEvent> = (span.events ?? []).map((event) => ({
    name: event.name,
    timeUnixNano: String(event.time),
    attributes: attributesOf(event.attributes)
  }))
  if (exception !== undefined) events.push(exception)
  return events
}

const linksOf = (span: EndedSpan): Array<OtlpLink> =>
  span.links.map((link) => ({
    traceId: link.span.traceId,
    spanId: link.span.spanId,
    attributes: attributesOf(link.attributes)
  }))

/** `span` as an OTLP object: the mapping stated once as data, which the tests hold the writers to. */
export const toOtlpSpan = (span: EndedSpan): OtlpSpan => {
  const { endTime, exit, startTime } = span.status
  const { exception, status } = outcome(exit, endTime)
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    ...(Option.isSome(span.parent) ? { parentSpanId: span.parent.value.spanId } : {}),
    name: span.name,
    kind: kinds[span.kind],
    startTimeUnixNano: String(startTime),
    endTimeUnixNano: String(endTime),
    attributes: OtlpResource.entriesToAttributes(span.attributes),
    events: eventsOf(span, exception),
    status,
    links: linksOf(span)
  }
}

// Attribute keys are the code's constants: each one's JSON is made once.
const keyJson = new Map<string, string>()
const keyOf = (key: string) => {
  let json = keyJson.get(key)
  if (json === undefined) {
    json = `{"key":${JSON.stringify(key)},"value":`
    if (keyJson.size < 1024) keyJson.set(key, json)
  }
  return json
}

/** `OtlpResource.unknownToAttributeValue`'s JSON, written directly for the common kinds of value. */
const valueJson = (value: unknown): string => {
  if (typeof value === "string") return `{"stringValue":${JSON.stringify(value)}}`
  if (typeof value === "number") {
    if (Number.isSafeInteger(value)) return `{"intValue":${value}}`
    if (!Number.isInteger(value)) return `{"doubleValue":${Number.isFinite(value) ? value : `"${value}"`}}`
  }
  if (typeof value === "boolean") return `{"boolValue":${value}}`
  return otlpJson(OtlpResource.unknownToAttributeValue(value))
}

/**
 * OTLP objects as JSON: a double that is NaN or infinite as the protobuf JSON mapping writes it (`"NaN"`,
 * `"Infinity"`, `"-Infinity"`), where `JSON.stringify` alone would write `null`.
 */
const otlpJson = (value: unknown): string =>
  JSON.stringify(
    value,
    (key, field: unknown) =>
      key === "doubleValue" && typeof field === "number" && !Number.isFinite(field) ? String(field) : field
  )

/** Attributes given as keys and values in turn (`RecordedSpan.attributeList`). */
const attributesJson = (list: ReadonlyArray<unknown>) => {
  let json = ""
  for (let i = 0; i < list.length; i += 2) {
    json += `${i === 0 ? "" : ","}${keyOf(list[i] as string)}${valueJson(list[i + 1])}}`
  }
  return json
}

/**
 * `span` as OTLP/JSON text, equal to `toOtlpSpan(span)` in the JSON mapping once parsed: written directly, because
 * building the objects and stringifying them was most of what an exported span cost (`bench/NOTES.md`).
 */
export const spanJson = (span: EndedSpan): string => {
  const { endTime, exit, startTime } = span.status
  const { exception, status } = outcome(exit, endTime)
  const parent = Option.isSome(span.parent) ? `,"parentSpanId":"${span.parent.value.spanId}"` : ""
  const events = span.events === undefined && exception === undefined ? "" : otlpJson(eventsOf(span, exception))
  let links = ""
  for (const link of span.links) {
    links += `${
      links === "" ? "" : ","
    }{"traceId":"${link.span.traceId}","spanId":"${link.span.spanId}","attributes":[${
      attributesJson(Object.entries(link.attributes).flat())
    }]}`
  }
  return `{"traceId":"${span.traceId}","spanId":"${span.spanId}"${parent},"name":${JSON.stringify(span.name)},"kind":${
    kinds[span.kind]
  },"startTimeUnixNano":"${startTime}","endTimeUnixNano":"${endTime}","attributes":[${
    attributesJson(span.attributeList)
  }],"events":${events === "" ? "[]" : events},"status":${
    status === unset ? `{"code":0}` : JSON.stringify(status)
  },"links":[${links}]}`
}
