import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, FiberSet, Schedule, Tracer } from "effect"
import type { Scope } from "effect"
import type { EndedAttemptSpan } from "./AttemptSpan.js"
import { RecordedSpan } from "./RecordedSpan.js"
import { jsonBatches, protobufBatches } from "./SpanBatch.js"
import type { ExportedSpan, NewBatch, SpanBatch } from "./SpanBatch.js"
import type { SpanBatches } from "./TelemetryConfig.js"

export interface SpanExporterOptions {
  readonly url: string
  readonly headers: Record<string, string>
  readonly protocol: "http/json" | "http/protobuf"
  readonly serviceName: string
  readonly serviceVersion: string
  readonly batches: SpanBatches
  /** How long shutdown waits for the last exports. */
  readonly shutdownTimeout: Duration.Duration
}

// As `@effect/opentelemetry`'s exporters do: a failed export is tried three more times, a second apart.
const retried = <E, R>(client: HttpClient.HttpClient.With<E, R>) =>
  HttpClient.filterStatusOk(client).pipe(HttpClient.retryTransient({ schedule: Schedule.spaced("1 second"), times: 3 }))

export interface SpanExporter {
  /** Effect's tracer, whose sampled spans are exported. */
  readonly tracer: Tracer.Tracer
  /** Exports a sampled attempt's span as it ends (`DeliverySpans`), in the same batches. */
  readonly exportAttempt: (span: EndedAttemptSpan) => void
}

/**
 * The tracer hookrelay exports with: Effect's `Tracer` whose spans (`RecordedSpan`) go to the OTLP/HTTP endpoint in
 * batches, `OTEL_BSP_*` as the specification's batch processor reads them: a batch leaves when it holds
 * `maxBatchSize` spans, and every `scheduleDelay` with what has ended since; spans beyond `maxQueueSize` (those of
 * batches not yet sent, retries included) are dropped and counted in a warning. The exporter's HTTP client is the
 * `HttpClient` in context (`OtlpClient.exportClient`: compression, timeout, failure warnings). The resource is
 * `@effect/opentelemetry`'s (`OTEL_RESOURCE_ATTRIBUTES`), as for metrics; protobuf is its encoder.
 *
 * Not `@effect/opentelemetry`'s OTLP tracer: that one made OTLP objects of every span as it ended, kept them until the
 * export and stringified them then, which cost the delivery side's main thread three to six times as much CPU per
 * job (`bench/NOTES.md`).
 */
export const makeSpanExporter = (
  options: SpanExporterOptions
): Effect.Effect<SpanExporter, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const resource = yield* OtlpResource.fromConfig({
      serviceName: options.serviceName,
      serviceVersion: options.serviceVersion
    })
    const source = { resource, scope: { name: "hookrelay", version: options.serviceVersion } }
    const newBatch: NewBatch = options.protocol === "http/protobuf" ? protobufBatches(source) : jsonBatches(source)
    const client = retried(yield* HttpClient.HttpClient)
    const request = HttpClientRequest.post(options.url).pipe(
      HttpClientRequest.setHeaders(options.headers),
      HttpClientRequest.setHeader("user-agent", `hookrelay/${options.serviceVersion}`)
    )
    const { maxBatchSize, maxQueueSize, scheduleDelay } = options.batches

    let batch = newBatch()
    /** Spans held: the open batch's and those of exports not finished. */
    let held = 0
    let dropped = 0

    const reportDropped = Effect.suspend(() => {
      if (dropped === 0) return Effect.void
      const count = dropped
      dropped = 0
      return Effect.logWarning(
        `${count} spans dropped: ${maxQueueSize} were waiting for the collector already (OTEL_BSP_MAX_QUEUE_SIZE)`
      )
    })

    const send = (sent: SpanBatch) =>
      reportDropped.pipe(
        Effect.zipRight(client.execute(HttpClientRequest.setBody(request, sent.body()))),
        // Failures are reported by the export client; the spans are dropped.
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => {
          held -= sent.size
          sent.release()
        })),
        // The export's own requests make no spans.
        Effect.withTracerEnabled(false)
      )

    const fibers = yield* FiberSet.make()
    const runFork = yield* FiberSet.runtime(fibers)<never>()
    const flush = () => {
      if (batch.size === 0) return
      const full = batch
      batch = newBatch()
      runFork(send(full))
    }
    const onEnd = (span: ExportedSpan) => {
      if (held >= maxQueueSize) {
        dropped += 1
        return
      }
      held += 1
      batch.add(span)
      if (batch.size >= maxBatchSize) flush()
    }

    yield* Effect.sync(flush).pipe(
      Effect.delay(scheduleDelay),
      Effect.forever,
      Effect.interruptible,
      Effect.forkScoped
    )
    // Runs before the fiber set's own finalizer interrupts what is left.
    yield* Effect.addFinalizer(() =>
      Effect.sync(flush).pipe(
        Effect.zipRight(FiberSet.awaitEmpty(fibers)),
        Effect.timeoutOption(options.shutdownTimeout)
      )
    )

    return {
      tracer: Tracer.make({
        span: (name, parent, context, links, startTime, kind) =>
          new RecordedSpan(name, parent, context, links, startTime, kind, onEnd),
        context: (f) => f()
      }),
      exportAttempt: onEnd
    }
  })
