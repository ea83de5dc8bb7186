import type * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { HttpBody } from "@effect/platform"
import { AttemptSpan } from "./AttemptSpan.js"
import type { EndedAttemptSpan } from "./AttemptSpan.js"
import { BodyWriter, encodedOnce, varintSize } from "./BodyWriter.js"
import { spanJson } from "./OtlpSpans.js"
import type { EndedSpan } from "./RecordedSpan.js"
import { writeAttemptSpan, writeKeyValueObject, writeSpan } from "./SpanProtobuf.js"

/** A span the exporter takes: one of the tracer's, or a delivery attempt's (`DeliverySpans`). */
export type ExportedSpan = EndedSpan | EndedAttemptSpan

/** The spans of one export, taken as they end, and the body that sends them. */
export interface SpanBatch {
  readonly size: number
  readonly add: (span: ExportedSpan) => void
  readonly body: () => HttpBody.HttpBody
  /** The export is over: its body's memory may be reused. */
  readonly release: () => void
}

/** Who sent the spans: `resourceSpans[0]` without its spans. */
export interface SpanSource {
  readonly resource: OtlpResource.Resource
  readonly scope: { readonly name: string; readonly version: string }
}

/** Makes the empty batch of one export. */
export type NewBatch = () => SpanBatch

/**
 * Where batches get their bytes: a batch's buffer starts as large as the largest body yet, and a sent body's buffer is
 * reused (`release`): growing and touching new memory per batch cost as much as writing the spans.
 */
const bodyBuffers = () => {
  let spare: Buffer | undefined
  let largest = 64 * 1024
  return {
    take: (): Buffer => {
      const bytes = spare !== undefined && spare.length >= largest
        ? spare
        : Buffer.allocUnsafe(Math.ceil(largest * 1.125))
      spare = undefined
      return bytes
    },
    sent: (length: number) => {
      // Not shrunk after a small body (the timer's): the next full batch would grow it again, copying as it goes.
      largest = Math.max(largest, length)
    },
    give: (bytes: Buffer) => {
      spare = bytes
    }
  }
}

/**
 * OTLP/JSON. Each span is written into the body's bytes as it ends, so no span (nor an object made from it) stays on
 * the heap until the export: the garbage collector never copies or promotes them.
 */
export const jsonBatches = (source: SpanSource): NewBatch => {
  const head = `{"resourceSpans":[{"resource":${JSON.stringify(source.resource)},"scopeSpans":[{"scope":${
    JSON.stringify(source.scope)
  },"spans":[`
  const tail = "]}]}]}"
  const buffers = bodyBuffers()
  return () => {
    const writer = new BodyWriter(buffers.take(), 0)
    writer.text(head)
    let size = 0
    return {
      get size() {
        return size
      },
      add: (span) => {
        if (size > 0) writer.text(",")
        writer.text(spanJson(span instanceof AttemptSpan ? span.recorded() : span))
        size += 1
      },
      body: () => {
        writer.text(tail)
        buffers.sent(writer.length)
        return HttpBody.uint8Array(writer.bytes.subarray(0, writer.length), "application/json")
      },
      release: () => buffers.give(writer.bytes)
    }
  }
}

// Field numbers of opentelemetry/proto: `ExportTraceServiceRequest.resource_spans`, `ResourceSpans.resource` and
// `.scope_spans`, `ScopeSpans.scope` and `.spans`, `Resource.attributes`, `InstrumentationScope.name` and `.version`.
const request = { resourceSpans: 1 } as const
const resourceSpans = { resource: 1, scopeSpans: 2 } as const
const scopeSpans = { scope: 1, spans: 2 } as const

/** A message field whose content `write` writes, as bytes. */
const encoded = (field: number, write: (writer: BodyWriter) => void) =>
  encodedOnce((writer) => {
    const at = writer.open(field)
    write(writer)
    writer.close(at)
  })

/**
 * OTLP/protobuf, the same way as `jsonBatches`: each span written into the body as it ends (`SpanProtobuf`). The
 * request's head, whose lengths count the spans' bytes, is written before them when the body is sent.
 */
export const protobufBatches = (source: SpanSource): NewBatch => {
  const resource = encoded(resourceSpans.resource, (writer) => {
    for (const attribute of source.resource.attributes) writeKeyValueObject(writer, 1, attribute)
  })
  const scope = encoded(scopeSpans.scope, (writer) => {
    writer.string(1, source.scope.name)
    writer.string(2, source.scope.version)
  })
  // Room for the head: the two fixed parts, three tags and three lengths.
  const headRoom = resource.length + scope.length + 3 + 3 * 8
  const buffers = bodyBuffers()
  return () => {
    const writer = new BodyWriter(buffers.take(), headRoom)
    let size = 0
    return {
      get size() {
        return size
      },
      add: (span) => {
        if (span instanceof AttemptSpan) writeAttemptSpan(writer, scopeSpans.spans, span)
        else writeSpan(writer, scopeSpans.spans, span)
        size += 1
      },
      body: () => {
        const scopeSpansSize = scope.length + writer.length - headRoom
        const resourceSpansSize = resource.length + 1 + varintSize(scopeSpansSize) + scopeSpansSize
        const head = new BodyWriter(Buffer.allocUnsafe(headRoom), 0)
        head.lengthDelimited(request.resourceSpans, resourceSpansSize)
        head.raw(resource)
        head.lengthDelimited(resourceSpans.scopeSpans, scopeSpansSize)
        head.raw(scope)
        buffers.sent(writer.length)
        return HttpBody.uint8Array(writer.prepend(head.bytes.subarray(0, head.length)), "application/x-protobuf")
      },
      release: () => buffers.give(writer.bytes)
    }
  }
}
