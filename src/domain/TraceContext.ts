/**
 * W3C Trace Context (`traceparent`, https://www.w3.org/TR/trace-context/): the trace a tracking request belongs to,
 * stored with its jobs and sent on their deliveries so a receiver's trace joins the producer's.
 */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string
  /** 16 lowercase hex digits, not all zero. */
  readonly spanId: string
  readonly sampled: boolean
}

// Version 00 exactly; a later version may append fields after the flags (the spec's forward compatibility).
const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/
const traceIdPattern = /^(?!0{32})[0-9a-f]{32}$/
const spanIdPattern = /^(?!0{16})[0-9a-f]{16}$/

/** Whether `ids` are W3C Trace Context's (and OTLP's): 32 and 16 lowercase hex digits, neither all zeros. */
export const hasW3cIds = (ids: { readonly traceId: string; readonly spanId: string }): boolean =>
  traceIdPattern.test(ids.traceId) && spanIdPattern.test(ids.spanId)

/** A `traceparent` header's context, or undefined when it is absent or malformed (which the spec says to ignore). */
export const parseTraceparent = (header: string | undefined): TraceContext | undefined => {
  if (header === undefined) return undefined
  const match = traceparentPattern.exec(header.trim())
  if (match === null) return undefined
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?
  ]
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined
  if (!hasW3cIds({ traceId, spanId })) return undefined
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 }
}

/** What a `traceparent` of the trace `traceId` starts with, for `formatTraceparent`. */
export const traceparentPrefix = (traceId: string): string => `00-${traceId}-`

/**
 * The `traceparent` header of a context (version 00). `prefix`, its trace's `traceparentPrefix`, may be given by a
 * caller that formats many of one trace: fewer pieces to join for each.
 */
export const formatTraceparent = (context: TraceContext, prefix = traceparentPrefix(context.traceId)): string =>
  `${prefix}${context.spanId}${context.sampled ? "-01" : "-00"}`
