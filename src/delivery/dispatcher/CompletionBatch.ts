import { Effect, Latch } from "effect"
import type { AttemptRecord } from "../../domain/AttemptRecord.js"
import type { ClaimedJob, Completion } from "../../store/Model.js"
import type { AllEndpointsFailed, Deferred } from "../DeliveryResult.js"
import { persistStates } from "../EndpointState.js"
import type { DeliveryOutcome } from "../Outcomes.js"

/** What finished since the last flush, waiting for the next one; and the flusher's state across flushes. */
export interface CompletionBatch {
  completions: Array<Completion>
  /** The completions of the write in progress (back in `completions` if it fails). */
  writing: ReadonlyArray<Completion>
  attempts: Array<AttemptRecord>
  finished: Array<DeliveryOutcome>
  latencies: Array<number>
  /** Writes of finished jobs failed in a row (the store cannot answer): logged once, tried again with backoff. */
  writeFailures: number
  /** Attempts at the head of `attempts` that a failed write put back: already counted in the metrics. */
  counted: number
  readonly flushSize: number
  /** Open when anything waits to be written: the flusher wakes. */
  readonly workWaiting: Latch.Latch
  /** Open when `flushSize` finished jobs wait: the flusher stops waiting for `flushDelay`. */
  readonly batchFull: Latch.Latch
}

/** An empty batch, its latches closed. */
export const makeCompletionBatch = (flushSize: number) =>
  Effect.gen(function*() {
    const batch: CompletionBatch = {
      completions: [],
      writing: [],
      attempts: [],
      finished: [],
      latencies: [],
      writeFailures: 0,
      counted: 0,
      flushSize,
      workWaiting: yield* Latch.make(false),
      batchFull: yield* Latch.make(false)
    }
    return batch
  })

/**
 * Booking into the batch, synchronous: each attempt, and each job's completion with the outcome it publishes. A job
 * is booked once; the caller forgets it (its lease) afterwards.
 */
export const makeBooking = (batch: CompletionBatch) => {
  const { batchFull, flushSize, workWaiting } = batch

  const attempt = (record: AttemptRecord): void => {
    batch.attempts.push(record)
    workWaiting.openUnsafe()
  }

  const book = (completion: Completion, outcome: DeliveryOutcome): void => {
    if (batch.completions.push(completion) === flushSize) batchFull.openUnsafe()
    batch.finished.push(outcome)
    workWaiting.openUnsafe()
  }

  const delivered = (job: ClaimedJob, at: number, firstAttemptAt: number, url: string): void => {
    batch.latencies.push(Math.max(0, at - job.createdAt) / 1000)
    book(
      {
        _tag: "Delivered",
        jobId: job.id,
        at,
        firstAttemptAt,
        sourceId: job.sourceId,
        destinationId: job.destinationId,
        createdAt: job.createdAt
      },
      {
        jobId: job.id,
        sourceId: job.sourceId,
        messageId: job.messageId,
        kind: job.kind,
        status: "delivered",
        at,
        url
      }
    )
  }

  const dead = (job: ClaimedJob, completion: Extract<Completion, { _tag: "Dead" }>): void =>
    book(completion, {
      jobId: job.id,
      sourceId: job.sourceId,
      messageId: job.messageId,
      kind: job.kind,
      status: "dead",
      at: completion.at,
      error: completion.lastError ?? undefined
    })

  /** Dead without an attempt: the source has no (enabled) webhook destination. */
  const deadLetter = (job: ClaimedJob, at: number, reason: string): void =>
    dead(job, { _tag: "Dead", jobId: job.id, at, lastError: reason })

  /** Every URL failed: dead, with each URL's progress kept. */
  const failed = (job: ClaimedJob, at: number, error: AllEndpointsFailed): void =>
    dead(job, {
      _tag: "Dead",
      jobId: job.id,
      at,
      lastError: error.message,
      firstAttemptAt: error.firstAttemptAt,
      endpointState: persistStates(error.endpoints)
    })

  /** The next attempt is further away than an in-memory wait: back to the store with each URL's progress. */
  const deferred = (job: ClaimedJob, outcome: Deferred): void => {
    const last = outcome.endpoints.find((state) => state.lastOutcome !== undefined)?.lastOutcome
    if (
      batch.completions.push({
        _tag: "Retry",
        jobId: job.id,
        nextDueAt: outcome.nextAttemptAt,
        firstAttemptAt: outcome.firstAttemptAt,
        endpointState: persistStates(outcome.endpoints),
        lastError: last === undefined || last._tag === "Success" ? null : last.reason
      }) === flushSize
    ) batchFull.openUnsafe()
    workWaiting.openUnsafe()
  }

  return { attempt, delivered, deadLetter, failed, deferred }
}
