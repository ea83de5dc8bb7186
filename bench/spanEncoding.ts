/**
 * What writing one exported span into an export body costs, OTLP/JSON (`jsonBatches`) against OTLP/protobuf
 * (`protobufBatches`), without a network: batches of 2 048 delivery-attempt spans as `DeliverySpans` makes them
 * (`AttemptSpan`: eight attributes, a parent and a link), the two formats alternating within each round. Reports ns per span (the median
 * round and the range), body bytes per span and heap bytes allocated per span (a sampling heap profile that keeps
 * what was collected). Writes bench/results/span-encoding.{md,json}.
 *
 *   node --expose-gc --import tsx bench/spanEncoding.ts [rounds]
 */
import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { Clock, Option, Tracer } from "effect"
import type { AttemptRecord } from "../src/delivery/AttemptRecord.js"
import { AttemptSpan, urlAttributes } from "../src/telemetry/AttemptSpan.js"
import type { AttemptSpanSink } from "../src/telemetry/AttemptSpan.js"
import { jsonBatches, protobufBatches } from "../src/telemetry/SpanBatch.js"
import type { ExportedSpan, NewBatch } from "../src/telemetry/SpanBatch.js"
import { newSpanId } from "../src/telemetry/SpanIds.js"
import { allocatedBytes } from "./support/allocations.js"
import { writeResults } from "./support/processes.js"

const rounds = Number(process.argv[2] ?? 9)
const batchesPerRound = 60
const spansPerBatch = 2048

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("run with node --expose-gc")

const producer = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })
const links = [{ _tag: "SpanLink" as const, span: producer, attributes: {} }]

/** The spans are ended and added by the benchmark itself. */
const unexported: AttemptSpanSink = { clock: Clock.make(), exportAttempt: () => {} }
const url = urlAttributes("https://hooks.example.com/segment/in")
const record: AttemptRecord = {
  jobId: "job-1",
  url: url.full,
  attemptNumber: 1,
  startedAt: 1_795_854_902_647,
  durationMs: 4,
  outcome: "Success",
  status: 200
}

/**
 * An attempt's span as `DeliverySpans` makes and ends it, ids and times its own: protobuf writes it as it is, JSON
 * writes its `recorded()` span, made as it is added.
 */
const attemptSpan = (i: number): ExportedSpan =>
  new AttemptSpan(
    unexported,
    producer.traceId,
    newSpanId(),
    Option.some(producer),
    links,
    1_795_854_902_647_000_000n + BigInt(i) * 1000n,
    url,
    `ajs-next-1763715784001-${String(i).padStart(8, "0")}`,
    1
  ).end(record, 1_795_854_902_647_000_000n + BigInt(i) * 1000n + 4_200_000n)

const spans = Array.from({ length: spansPerBatch }, (_, i) => attemptSpan(i))
const source = {
  resource: OtlpResource.make({ serviceName: "hookrelay", serviceVersion: "1.0.0" }),
  scope: { name: "hookrelay", version: "1.0.0" }
}
const formats: ReadonlyArray<readonly [string, NewBatch]> = [
  ["http/json", jsonBatches(source)],
  ["http/protobuf", protobufBatches(source)]
]

interface Round {
  readonly format: string
  readonly round: number
  readonly nsPerSpan: number
  readonly bodyBytesPerSpan: number
}

/** `batches` batches of every span in `format`; the last body's length. */
const writeBatches = (newBatch: NewBatch, batches: number) => {
  let bodyBytes = 0
  for (let b = 0; b < batches; b++) {
    const batch = newBatch()
    for (const span of spans) batch.add(span)
    const body = batch.body()
    if (body._tag === "Uint8Array") bodyBytes = body.body.length
    batch.release()
  }
  return bodyBytes
}

const timedRound = (format: string, newBatch: NewBatch, round: number): Round => {
  gc()
  const started = process.hrtime.bigint()
  const bodyBytes = writeBatches(newBatch, batchesPerRound)
  const elapsed = Number(process.hrtime.bigint() - started)
  return {
    format,
    round,
    nsPerSpan: Math.round(elapsed / (batchesPerRound * spansPerBatch)),
    bodyBytesPerSpan: Math.round(bodyBytes / spansPerBatch)
  }
}

/** Heap bytes allocated per span, garbage included, over a few batches. */
const heapBytesPerSpan = async (newBatch: NewBatch): Promise<number> => {
  const batches = 10
  const bytes = await allocatedBytes(() => {
    writeBatches(newBatch, batches)
  })
  return Math.round(bytes / (batches * spansPerBatch))
}

const results: Array<Round> = []
for (let round = 0; round <= rounds; round++) {
  // Round 0 warms both up and is not reported; the format that goes first alternates.
  const order = round % 2 === 0 ? formats : [...formats].reverse()
  for (const [format, newBatch] of order) {
    const result = timedRound(format, newBatch, round)
    if (round > 0) results.push(result)
  }
}
const heap = new Map<string, number>()
for (const [format, newBatch] of formats) heap.set(format, await heapBytesPerSpan(newBatch))

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}
const summary = formats.map(([format]) => {
  const own = results.filter((result) => result.format === format)
  const ns = own.map((result) => result.nsPerSpan)
  return {
    format,
    nsPerSpanMedian: median(ns),
    nsPerSpanRange: [Math.min(...ns), Math.max(...ns)],
    bodyBytesPerSpan: own[0]!.bodyBytesPerSpan,
    heapBytesPerSpan: heap.get(format)!
  }
})
const ratios = Array.from({ length: rounds }, (_, i) => {
  const of = (format: string) => results.find((result) => result.round === i + 1 && result.format === format)!
  return Math.round(of("http/protobuf").nsPerSpan / of("http/json").nsPerSpan * 100) / 100
})

const markdown = `# Span encoding: OTLP/JSON against OTLP/protobuf

One exported delivery-attempt span written into an export body (\`SpanBatch\`), in batches of ${spansPerBatch}, ${batchesPerRound}
batches a round, ${rounds} rounds (after one to warm up), the two formats alternating within each round. No network:
what the server's main thread pays per span before the body is sent.

| format | ns per span (median) | range | body bytes per span | heap bytes allocated per span |
|---|---|---|---|---|
${
  summary.map((row) =>
    `| ${row.format} | ${row.nsPerSpanMedian} | ${row.nsPerSpanRange[0]}–${
      row.nsPerSpanRange[1]
    } | ${row.bodyBytesPerSpan} | ${row.heapBytesPerSpan} |`
  ).join("\n")
}

protobuf ÷ JSON, ns per span, per round: median **${median(ratios)}** (${ratios.join(", ")}).
`
console.log(markdown)
writeResults("span-encoding", markdown, { rounds, batchesPerRound, spansPerBatch, summary, ratios, results })
