import { Clock, type Context, Effect, Metric, Result } from "effect"
import { validateBatch } from "../domain/Batch.js"
import { deliveredBody, encodeBody } from "../domain/DeliveredBody.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { uuidv7 } from "../domain/MessageId.js"
import { routeMessage } from "../domain/Routing.js"
import { stampMessage } from "../domain/Stamp.js"
import { ingestCommitLatency, messagesIngested } from "../metrics/Metrics.js"
import type { IngestAdmissionShape } from "../overload/IngestAdmission.js"
import type { EnqueueEntry, StoredSource } from "../store/Model.js"
import type { OutboxShape } from "../store/Outbox.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { StoreError } from "../store/StoreError.js"
import type { IngestOptions, RelayShape } from "./Relay.js"

/** What ingest works with; `RelayLive.make` gathers it once. */
export interface IngestParts {
  readonly outbox: OutboxShape
  readonly sourceById: (sourceId: string) => Effect.Effect<StoredSource, UnknownSource | StoreError>
  readonly admission: IngestAdmissionShape
  /** Tells the dispatcher (when the engine has one in this process) that ingest is busy; see `IngestPressure`. */
  readonly ingesting: <A, E, R>(commit: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly signal: OutboxSignalShape
  readonly clock: Clock.Clock
  /** The engine's context: its metric registry is the one the commit latency is recorded in. */
  readonly context: Context.Context<never>
}

/** Ingest: validate, stamp and route a batch, then commit it to the outbox (admitted when not overloaded). */
export const makeIngest = (
  { admission, clock, context, ingesting, outbox, signal, sourceById }: IngestParts
): RelayShape["ingest"] => {
  // Recorded in a synchronous step on success (a failed commit is a 5xx, not a latency): an `Effect` metric update and a
  // timed span would add fiber steps to every tracking request (bench/NOTES.md, "Fiber steps of a tracking request").
  const timed = <A, E, R>(commit: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      const started = clock.currentTimeNanosUnsafe()
      return Effect.map(commit, (result) => {
        ingestCommitLatency.updateUnsafe(Number(clock.currentTimeNanosUnsafe() - started) / 1e9, context)
        return result
      })
    })

  return (sourceId, items, options: IngestOptions = {}) =>
    Effect.gen(function*() {
      const source = yield* sourceById(sourceId)
      const messages = yield* Result.match(
        validateBatch(items, options.defaults, options.expectedType, options.sizeBound),
        {
          onFailure: Effect.fail,
          onSuccess: Effect.succeed
        }
      )
      const receivedAt = yield* Clock.currentTimeMillis
      const messageIds: Array<string> = []
      const entries: Array<EnqueueEntry> = messages.map((message) => {
        const stamped = stampMessage(message, {
          receivedAt,
          generatedMessageId: message.messageId ?? uuidv7(receivedAt),
          batchSentAt: options.batchSentAt
        })
        messageIds.push(stamped.messageId)
        // One body for every destination the message goes to: its bytes are serialized and signed as they are.
        const route = routeMessage(source.destinations, stamped)
        const delivered = route.destinationIds.length > 0
        return {
          messageId: stamped.messageId,
          userId: stamped.userId,
          anonymousId: stamped.anonymousId,
          type: stamped.type,
          event: typeof stamped.event === "string" ? stamped.event : undefined,
          body: delivered ? encodeBody(deliveredBody(stamped)) : undefined,
          destinationIds: delivered ? route.destinationIds : undefined,
          filtered: route.filtered
        }
      })
      // Refused (503) before the transaction starts when overloaded; never after it committed.
      // Untraced (telemetry off), the options carry no trace field at all.
      const enqueueOptions = options.traceparent === undefined
        ? { countApiCall: options.apiCall ?? false }
        : { countApiCall: options.apiCall ?? false, traceparent: options.traceparent }
      const result = yield* admission.admit(
        ingesting(timed(outbox.enqueue(source.id, entries, receivedAt, enqueueOptions)))
      )
      if (result.jobsCreated > 0) yield* signal.notify
      yield* Metric.update(messagesIngested, result.accepted)
      return {
        accepted: messages.length,
        duplicates: result.duplicates,
        jobs: result.jobsCreated,
        messageIds
      }
    })
}
