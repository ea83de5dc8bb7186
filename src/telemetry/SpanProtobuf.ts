import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { Option } from "effect"
import type { Tracer } from "effect"
import { attemptExit, putAttemptAttributes, putUrlAttributes } from "./AttemptSpan.js"
import type { EndedAttemptSpan, PutAttribute, UrlAttributes } from "./AttemptSpan.js"
import type { BodyWriter } from "./BodyWriter.js"
import { encodedOnce } from "./BodyWriter.js"
import { eventsOf, kinds, outcome, unset } from "./OtlpSpans.js"
import type { OtlpEvent, OtlpStatus } from "./OtlpSpans.js"
import type { EndedSpan } from "./RecordedSpan.js"

// Field numbers of opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto, as the written messages use them.
const span = {
  traceId: 1,
  spanId: 2,
  parentSpanId: 4,
  name: 5,
  kind: 6,
  startTime: 7,
  endTime: 8,
  attributes: 9,
  events: 11,
  links: 13,
  status: 15
} as const
const event = { time: 1, name: 2, attributes: 3 } as const
const link = { traceId: 1, spanId: 2, attributes: 4 } as const
const status = { message: 2, code: 3 } as const
const keyValue = { key: 1, value: 2 } as const
const anyValue = { string: 1, bool: 2, int: 3, double: 4, array: 5, kvlist: 6 } as const
/** `ArrayValue.values` and `KeyValueList.values`. */
const values = 1

const lenTag = (field: number) => field * 8 + 2

const encodedField = (field: number, text: string) => encodedOnce((writer) => writer.string(field, text))

/**
 * A constant text's field, tag and length included, encoded once: the keys of attributes and the names of spans. The
 * encoding is a function of its own: a closure here capturing `text` would make every call allocate a context for it
 * (~40 bytes each, ten a span).
 */
const constantField = (field: number) => {
  const cache = new Map<string, Buffer>()
  return (text: string): Buffer => {
    let bytes = cache.get(text)
    if (bytes === undefined) {
      bytes = encodedField(field, text)
      if (cache.size < 1024) cache.set(text, bytes)
    }
    return bytes
  }
}

/**
 * An id field whose id is most often the one the span before had (the trace's id, the producer's span id: an
 * attempt's parent and link are its tracking request's, shared by the jobs of that request): encoded once, copied
 * after.
 */
const repeatedId = (field: number) => {
  let last = ""
  // The field's bytes, copied into the body by one `set` (a byte loop cost ~12 % of a span). A copy, as a `Buffer`:
  // `Buffer#slice` would be a view of the body, whose memory is reused, and a small heap `Uint8Array` allocated on
  // every `set` from it.
  let encoded: Uint8Array = new Uint8Array(0)
  return (writer: BodyWriter, hex: string) => {
    if (hex === last) return writer.raw(encoded)
    const start = writer.length
    writer.hexBytes(field, hex)
    // An id longer than W3C's is written, not kept.
    last = writer.length - start <= 2 + 16 ? hex : ""
    if (last !== "") encoded = Buffer.from(writer.bytes.subarray(start, writer.length))
  }
}

const spanTraceId = repeatedId(span.traceId)
const parentSpanId = repeatedId(span.parentSpanId)
const linkTraceId = repeatedId(link.traceId)
const linkSpanId = repeatedId(link.spanId)

const keyField = constantField(keyValue.key)
const nameField = constantField(span.name)

/** An `AnyValue` from its OTLP object (`OtlpResource.unknownToAttributeValue`'s). */
const writeAnyValue = (writer: BodyWriter, value: OtlpResource.AnyValue) => {
  if (value.stringValue !== undefined && value.stringValue !== null) writer.string(anyValue.string, value.stringValue)
  else if (value.boolValue !== undefined && value.boolValue !== null) {
    writer.int64(anyValue.bool, value.boolValue ? 1 : 0)
  } else if (value.intValue !== undefined && value.intValue !== null) writer.int64(anyValue.int, value.intValue)
  else if (value.doubleValue !== undefined && value.doubleValue !== null) {
    writer.double(anyValue.double, value.doubleValue)
  } else if (value.arrayValue !== undefined) {
    const array = writer.open(anyValue.array)
    for (const item of value.arrayValue.values ?? []) {
      const at = writer.open(values)
      writeAnyValue(writer, item)
      writer.close(at)
    }
    writer.close(array)
  } else if (value.kvlistValue !== undefined) {
    const list = writer.open(anyValue.kvlist)
    for (const entry of value.kvlistValue.values ?? []) writeKeyValueObject(writer, values, entry)
    writer.close(list)
  }
}

/** A `KeyValue` from its OTLP object, as field `field`. */
export const writeKeyValueObject = (writer: BodyWriter, field: number, entry: OtlpResource.KeyValue) => {
  const at = writer.open(field)
  writer.raw(keyField(entry.key))
  const value = writer.open(keyValue.value)
  writeAnyValue(writer, entry.value)
  writer.close(value)
  writer.close(at)
}

/**
 * A `KeyValue` straight from the key and the value as a span holds them; the common kinds of value without an OTLP
 * object, and without a count of the text's bytes before it is written: the lengths of an attribute shorter than 128
 * bytes take one byte each, filled in after.
 */
const writeAttribute = (writer: BodyWriter, field: number, key: string, value: unknown) => {
  const keyBytes = keyField(key)
  const most = typeof value === "string"
    ? keyBytes.length + value.length * 3 + 4
    : typeof value === "boolean" || (typeof value === "number" && Number.isSafeInteger(value) && value >= 0)
    ? keyBytes.length + 12
    : maxShortEntry
  if (field >= 16 || most >= maxShortEntry) {
    return writeKeyValueObject(writer, field, { key, value: OtlpResource.unknownToAttributeValue(value) })
  }
  // As much as the writes below reserve, so that none of them moves the bytes.
  writer.reserve(most + 16)
  const bytes = writer.bytes
  bytes[writer.length++] = lenTag(field)
  const entryAt = writer.length++
  writer.raw(keyBytes)
  bytes[writer.length++] = lenTag(keyValue.value)
  const valueAt = writer.length++
  if (typeof value === "string") writer.string(anyValue.string, value)
  else if (typeof value === "boolean") writer.int64(anyValue.bool, value ? 1 : 0)
  else writer.int64(anyValue.int, value as number)
  bytes[valueAt] = writer.length - valueAt - 1
  bytes[entryAt] = writer.length - entryAt - 1
}

/** The longest attribute `writeAttribute` writes with one-byte lengths. */
const maxShortEntry = 128

const writeEvent = (writer: BodyWriter, entry: OtlpEvent) => {
  const at = writer.open(span.events)
  writer.fixed64(event.time, BigInt(entry.timeUnixNano))
  writer.string(event.name, entry.name)
  for (const attribute of entry.attributes) writeKeyValueObject(writer, event.attributes, attribute)
  writer.close(at)
}

/** A span's first fields, in field order: its ids, name, kind and times. */
const writeHead = (
  writer: BodyWriter,
  ids: { readonly traceId: string; readonly spanId: string; readonly parent: Option.Option<Tracer.AnySpan> },
  name: string,
  kind: Tracer.SpanKind,
  startTime: bigint,
  endTime: bigint
) => {
  spanTraceId(writer, ids.traceId)
  writer.hexBytes(span.spanId, ids.spanId)
  if (Option.isSome(ids.parent)) parentSpanId(writer, ids.parent.value.spanId)
  writer.raw(nameField(name))
  writer.int64(span.kind, kinds[kind])
  writer.fixed64(span.startTime, startTime)
  writer.fixed64(span.endTime, endTime)
}

/** A span's last fields: its links and its status. */
const writeTail = (writer: BodyWriter, links: ReadonlyArray<Tracer.SpanLink>, result: OtlpStatus) => {
  for (const entry of links) {
    const linkAt = writer.open(span.links)
    linkTraceId(writer, entry.span.traceId)
    linkSpanId(writer, entry.span.spanId)
    // No entry array per link: most links (an attempt's to its tracking request) have no attributes.
    const attributes = entry.attributes
    for (const key in attributes) {
      if (Object.hasOwn(attributes, key)) writeAttribute(writer, link.attributes, key, attributes[key])
    }
    writer.close(linkAt)
  }
  const statusAt = writer.open(span.status)
  if (result !== unset) {
    if (result.message !== undefined) writer.string(status.message, result.message)
    writer.int64(status.code, result.code)
  }
  writer.close(statusAt)
}

/**
 * `span` as an OTLP `Span` message, field `field` of the message being written: the protobuf counterpart of
 * `spanJson`, written into the body's bytes directly. A test decodes it with OpenTelemetry's own generated decoder
 * and holds it to `toOtlpSpan`.
 */
export const writeSpan = (writer: BodyWriter, field: number, ended: EndedSpan) => {
  const { endTime, exit, startTime } = ended.status
  const result = outcome(exit, endTime)
  const at = writer.open(field)
  writeHead(writer, ended, ended.name, ended.kind, startTime, endTime)
  const list = ended.attributeList
  for (let i = 0; i < list.length; i += 2) writeAttribute(writer, span.attributes, list[i] as string, list[i + 1])
  if (ended.events !== undefined || result.exception !== undefined) {
    for (const entry of eventsOf(ended, result.exception)) writeEvent(writer, entry)
  }
  writeTail(writer, ended.links, result.status)
  writer.close(at)
}

const putSpanAttribute: PutAttribute<BodyWriter> = (writer, key, value) =>
  writeAttribute(writer, span.attributes, key, value)

/** The attributes every attempt on one URL has, encoded once per URL (`DeliverySpans` keeps one object a URL). */
const urlBlocks = new WeakMap<UrlAttributes, Buffer>()

const urlBlock = (url: UrlAttributes): Buffer => {
  let block = urlBlocks.get(url)
  if (block === undefined) {
    block = encodedOnce((writer) => putUrlAttributes(writer, putSpanAttribute, url))
    urlBlocks.set(url, block)
  }
  return block
}

/**
 * An attempt's span, the same bytes as `writeSpan` of its `recorded()` span (a test holds it to that), from its own
 * fields: no attribute list, and its URL's attributes copied as one block.
 */
export const writeAttemptSpan = (writer: BodyWriter, field: number, attempt: EndedAttemptSpan) => {
  const at = writer.open(field)
  writeHead(writer, attempt, "POST", "client", attempt.startTime, attempt.endTime)
  writer.raw(urlBlock(attempt.url))
  putAttemptAttributes(writer, putSpanAttribute, attempt.attemptNumber, attempt.messageId, attempt.record)
  writeTail(
    writer,
    attempt.links,
    attempt.record.outcome === "Success" ? unset : outcome(attemptExit(attempt.record), attempt.endTime).status
  )
  writer.close(at)
}
