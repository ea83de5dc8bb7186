import type * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import type { OtlpSerialization } from "@effect/opentelemetry/OtlpSerialization"
import { HttpBody } from "@effect/platform"
import { spanJson, toOtlpSpan } from "./OtlpSpans.js"
import type { EndedSpan } from "./RecordedSpan.js"

/** The spans of one export, taken as they end, and the body that sends them. */
export interface SpanBatch {
  readonly size: number
  readonly add: (span: EndedSpan) => void
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
 * OTLP/JSON. Each span is written into the body's bytes as it ends, so no span (nor an object made from it) stays on
 * the heap until the export: the garbage collector never copies or promotes them. A batch's bytes start as large as
 * the last body was, and a sent body's bytes are reused (`release`): growing and touching new memory per batch cost
 * as much as writing the spans.
 */
export const jsonBatches = (source: SpanSource): NewBatch => {
  const head = `{"resourceSpans":[{"resource":${JSON.stringify(source.resource)},"scopeSpans":[{"scope":${
    JSON.stringify(source.scope)
  },"spans":[`
  const tail = "]}]}]}"
  let spare: Buffer | undefined
  let lastLength = 64 * 1024
  return () => {
    let bytes = spare !== undefined && spare.length >= lastLength
      ? spare
      : Buffer.allocUnsafe(lastLength + lastLength / 8)
    spare = undefined
    let length = bytes.write(head)
    let size = 0
    const reserve = (needed: number) => {
      if (length + needed <= bytes.length) return
      const grown = Buffer.allocUnsafe(Math.max(bytes.length * 2, length + needed))
      bytes.copy(grown, 0, 0, length)
      bytes = grown
    }
    return {
      get size() {
        return size
      },
      add: (span) => {
        const json = spanJson(span)
        // At most three bytes a UTF-16 unit; the exact count only when that bound does not fit.
        reserve(length + json.length * 3 + 1 <= bytes.length ? json.length * 3 + 1 : Buffer.byteLength(json) + 1)
        if (size > 0) bytes[length++] = 0x2c // ","
        length += bytes.write(json, length)
        size += 1
      },
      body: () => {
        reserve(tail.length)
        length += bytes.write(tail, length)
        lastLength = length
        return HttpBody.uint8Array(bytes.subarray(0, length), "application/json")
      },
      release: () => {
        spare = bytes
      }
    }
  }
}

/** OTLP/protobuf, by `@effect/opentelemetry`'s encoder, from the spans as OTLP objects. */
export const serializedBatches = (source: SpanSource, serialization: OtlpSerialization["Type"]): NewBatch => () => {
  const spans: Array<ReturnType<typeof toOtlpSpan>> = []
  return {
    get size() {
      return spans.length
    },
    add: (span) => {
      spans.push(toOtlpSpan(span))
    },
    body: () =>
      serialization.traces({
        resourceSpans: [{ resource: source.resource, scopeSpans: [{ scope: source.scope, spans }] }]
      }),
    release: () => {}
  }
}
