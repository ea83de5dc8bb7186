/**
 * What tracing costs one delivery attempt on the dispatcher's main thread, without a network: the attempt's input
 * through `DeliveryTracing.attempt` (its span started, the request given its `traceparent`) and its record (the span
 * ended and, when sampled, written into an export body), against the same attempt without telemetry. "unsampled" is
 * `OTEL_TRACES_SAMPLER=always_off` (ids and a `traceparent`, nothing kept); "on" exports every span (OTLP/protobuf).
 * The jobs of one tracking request share its `traceparent` (100 a request, as `bench/telemetry.ts` sends them). Modes
 * alternate within each round. Reports ns and heap bytes allocated per attempt; writes
 * bench/results/attempt-tracing.{md,json}.
 *
 *   npx tsx bench/attemptTracing.ts [rounds]
 *
 * Measured compiled to plain JavaScript, on plain node as the server runs: under tsx every closure made per attempt is
 * wrapped to keep its name, which costs more than the closure.
 */
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { Clock, Duration, Effect } from "effect"
import { prepareEndpoint } from "../src/delivery/Attempt.js"
import type { AttemptInput } from "../src/delivery/Attempt.js"
import type { AttemptRecord } from "../src/delivery/AttemptRecord.js"
import type { DeliveryTracingShape } from "../src/delivery/DeliveryTracing.js"
import { makeDeliverySpans } from "../src/telemetry/DeliverySpans.js"
import { withSampler } from "../src/telemetry/Sampler.js"
import type { Sampler } from "../src/telemetry/Sampler.js"
import { makeSpanExporter } from "../src/telemetry/SpanExporter.js"
import { allocatedBytes } from "./support/allocations.js"
import { runCompiled } from "./support/compile.js"
import { writeResults } from "./support/processes.js"

const rounds = Number(process.argv[2] ?? 9)
const attemptsPerRound = 200_000
const jobsPerRequest = 100
/**
 * Attempts between turns of the event loop, as the dispatcher's run between its I/O: an export sent when its batch
 * is full finishes and gives its body's buffer back for the next batch.
 */
const attemptsPerTurn = 500
const nextTurn = Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))

type Mode = "off" | "unsampled" | "on"
const modes: ReadonlyArray<Mode> = ["off", "unsampled", "on"]

/** The tracing of each mode, on one exporter whose collector answers at once. */
const tracings = Effect.gen(function*() {
  const collector = HttpClient.make((request) =>
    Effect.succeed(HttpClientResponse.fromWeb(request, new Response("{}")))
  )
  const exporter = yield* makeSpanExporter({
    url: "http://collector.test/v1/traces",
    headers: {},
    protocol: "http/protobuf",
    serviceName: "bench",
    serviceVersion: "1.0.0",
    // Batches leave when full, as under load; none is dropped.
    batches: { maxBatchSize: 2048, maxQueueSize: 1 << 20, scheduleDelay: Duration.hours(1) },
    shutdownTimeout: Duration.seconds(1)
  }).pipe(
    Effect.provideService(HttpClient.HttpClient, collector),
    Effect.provide(OtlpSerialization.layerProtobuf)
  )
  // eslint-disable-next-line @typescript-eslint/unbound-method -- Effect's own tracer's `context` uses no `this`
  const { context } = yield* Effect.tracer
  const clock = Clock.make()
  const tracing = (sampler: Sampler) =>
    makeDeliverySpans({
      tracer: withSampler(exporter.tracer, sampler, context),
      sampler,
      exportAttempt: exporter.exportAttempt,
      clock
    })
  return new Map<Mode, DeliveryTracingShape | undefined>([
    ["off", undefined],
    ["unsampled", tracing({ parentBased: false, root: "never" })],
    ["on", tracing({ parentBased: true, root: "always" })]
  ])
})

// A signed request to one endpoint, as the dispatcher prepares it once per job.
const endpoint = prepareEndpoint(
  { url: "https://hooks.example.com/segment/in" },
  new Uint8Array(300),
  "sha256=3f1b0d4c2a9e8f7d6c5b4a3928170f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8"
)
const noRecord = () => Effect.void
const succeeded = (input: AttemptInput): AttemptRecord => ({
  jobId: input.jobId,
  url: input.endpoint.url,
  attemptNumber: input.attemptNumber,
  startedAt: 1_795_854_902_647,
  durationMs: 4,
  outcome: "Success",
  status: 200
})

/**
 * `count` attempts through `tracing` (none: off), each job's input made as `Deliver` makes it; answers how many
 * requests carried a `traceparent` (checked, and keeps the work from being optimized away).
 */
const attempts = (tracing: DeliveryTracingShape | undefined, count: number, first: number) => {
  let traced = 0
  for (let i = first; i < first + count; i++) {
    const request = Math.floor(i / jobsPerRequest).toString(16).padStart(16, "0")
    const traceparent = `00-4bf92f3577b34da6${request}-00f067aa0ba902b7-01`
    const input: AttemptInput = {
      jobId: `job-${i}`,
      messageId: `ajs-next-1763715784001-${i}`,
      endpoint,
      attemptNumber: 1,
      record: noRecord,
      trace: undefined
    }
    const attempt = tracing === undefined ? input : tracing.attempt(input, traceparent)
    const record = succeeded(attempt)
    attempt.trace?.ended(record)
    attempt.record(record)
    // The receiver's `traceparent` continues the producer's trace: the stored one was read as the span's parent.
    const headers = attempt.endpoint.request.headers
    if (headers.at(-2) === "traceparent" && headers.at(-1)!.startsWith(traceparent.slice(0, 36))) traced += 1
  }
  if (traced !== (tracing === undefined ? 0 : count)) throw new Error(`${traced} of ${count} requests traced`)
}

/** Heap bytes allocated per attempt, garbage included. */
const heapBytesPerAttempt = async (tracing: DeliveryTracingShape | undefined): Promise<number> => {
  const count = 20_000
  const bytes = await allocatedBytes(async () => {
    for (let first = 0; first < count; first += attemptsPerTurn) {
      attempts(tracing, attemptsPerTurn, first)
      await Effect.runPromise(nextTurn)
    }
  })
  return Math.round(bytes / count)
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length / 2
  return sorted.length % 2 === 1 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

interface Round {
  readonly mode: Mode
  readonly round: number
  readonly nsPerAttempt: number
}

const measure = Effect.gen(function*() {
  const byMode = yield* tracings
  const results: Array<Round> = []
  for (let round = 0; round <= rounds; round++) {
    // Round 0 warms every mode up and is not reported; the order rotates.
    const order = modes.map((_, k) => modes[(k + round) % modes.length]!)
    for (const mode of order) {
      const started = process.hrtime.bigint()
      for (let first = 0; first < attemptsPerRound; first += attemptsPerTurn) {
        attempts(byMode.get(mode), attemptsPerTurn, round * attemptsPerRound + first)
        yield* nextTurn
      }
      const nsPerAttempt = Math.round(Number(process.hrtime.bigint() - started) / attemptsPerRound)
      if (round > 0) results.push({ mode, round, nsPerAttempt })
    }
  }
  const heap = new Map<Mode, number>()
  for (const mode of modes) heap.set(mode, yield* Effect.promise(() => heapBytesPerAttempt(byMode.get(mode))))
  return { results, heap }
})

const main = async () => {
  const { heap, results } = await Effect.runPromise(Effect.scoped(measure))
  const summary = modes.map((mode) => {
    const ns = results.filter((result) => result.mode === mode).map((result) => result.nsPerAttempt)
    return { mode, nsMedian: median(ns), nsRange: [Math.min(...ns), Math.max(...ns)], heapBytes: heap.get(mode)! }
  })
  const off = summary[0]!
  const markdown = `# Attempt tracing: what one delivery attempt's span costs the dispatcher's main thread

An attempt's input through \`DeliveryTracing.attempt\` and its record, without a network, ${attemptsPerRound} attempts a
round, ${rounds} rounds (after one to warm up), the modes alternating within each round; "off" is the same input without
telemetry. "unsampled": \`OTEL_TRACES_SAMPLER=always_off\`; "on": every span written into an OTLP/protobuf export body.
Compiled, on plain node.

| mode | ns per attempt (median) | range | more than off | heap bytes allocated per attempt |
|---|---|---|---|---|
${
    summary.map((row) =>
      `| ${row.mode} | ${row.nsMedian} | ${row.nsRange[0]}–${row.nsRange[1]} | ${
        row.nsMedian - off.nsMedian
      } | ${row.heapBytes} |`
    ).join("\n")
  }
`
  console.log(markdown)
  writeResults("attempt-tracing", markdown, { rounds, attemptsPerRound, jobsPerRequest, summary, results })
}

const fromSource = import.meta.url.endsWith(".ts")
;(fromSource
  ? runCompiled("hookrelay-attempt-tracing", ["src", "bench/support"], "bench/attemptTracing.ts").then((code) =>
    process.exit(code)
  )
  : main()).catch((error) => {
    console.error(error)
    process.exit(1)
  })
