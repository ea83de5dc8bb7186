import { Option } from "effect"
import type { Context, Exit, Tracer } from "effect"
import { newSpanId, newTraceId } from "./SpanIds.js"

/** An event of a span, as `Span.event` gives it. */
export interface SpanEvent {
  readonly name: string
  readonly time: bigint
  readonly attributes: Readonly<Record<string, unknown>> | undefined
}

/** A span that ended, as the exporter takes it. */
export interface EndedSpan extends RecordedSpan {
  readonly status: Extract<Tracer.SpanStatus, { readonly _tag: "Ended" }>
}

/**
 * A sampled span of the exporting tracer (`SpanExporter`): it keeps what it is given and, when it ends, hands itself
 * to `onEnd`. It is turned into OTLP only then (`OtlpSpans`), by the exporter.
 */
export class RecordedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly spanId: string
  readonly traceId: string
  /**
   * Keys and values in turn, read by the exporter as they are: no map to fill, nor an entry array per attribute to
   * read it. `attributes` makes the map when asked.
   */
  readonly attributeList: Array<unknown> = []
  links: ReadonlyArray<Tracer.SpanLink>
  events: Array<SpanEvent> | undefined = undefined
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    private readonly onEnd: (span: EndedSpan) => void,
    /** Ids made elsewhere (an attempt's, `AttemptSpan.recorded`); by default new ones, in the parent's trace. */
    ids?: { readonly traceId: string; readonly spanId: string }
  ) {
    this.spanId = ids?.spanId ?? newSpanId()
    this.traceId = ids?.traceId ?? (Option.isSome(parent) ? parent.value.traceId : newTraceId())
    this.links = links
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    this.onEnd(this as EndedSpan)
  }
  get attributes(): ReadonlyMap<string, unknown> {
    const map = new Map<string, unknown>()
    for (let i = 0; i < this.attributeList.length; i += 2) {
      map.set(this.attributeList[i] as string, this.attributeList[i + 1])
    }
    return map
  }
  attribute(key: string, value: unknown) {
    const list = this.attributeList
    // A key set again keeps its place and takes the new value, as a map's would.
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === key) {
        list[i + 1] = value
        return
      }
    }
    list.push(key, value)
  }
  event(name: string, time: bigint, attributes?: Record<string, unknown>) {
    ;(this.events ??= []).push({ name, time, attributes })
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    // A new array: the one given at the start may be shared with other spans.
    this.links = [...this.links, ...links]
  }
}
