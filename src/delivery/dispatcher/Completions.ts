import { Duration, Effect } from "effect"
import type { Context } from "effect"
import type { AttemptRecord } from "../../domain/AttemptRecord.js"
import { attemptsWithOutcome, deliveryLatency, jobsDead, jobsDelivered } from "../../metrics/Metrics.js"
import type { Completion } from "../../store/Model.js"
import type { OutboxShape } from "../../store/Outbox.js"
import type { DeliveryOutcome, DeliveryOutcomesShape } from "../Outcomes.js"
import { type CompletionBatch, makeBooking, makeCompletionBatch } from "./CompletionBatch.js"

export interface CompletionsConfig {
  readonly owner: string
  readonly outbox: OutboxShape
  readonly outcomes: DeliveryOutcomesShape
  readonly flushDelay: Duration.Duration
  readonly flushSize: number
}

const countAttempts = (records: ReadonlyArray<AttemptRecord>, context: Context.Context<never>) => {
  const byOutcome = { success: 0, retryable: 0, permanent: 0, aborted: 0 }
  for (const record of records) byOutcome[record.outcome] += 1
  for (const [outcome, count] of Object.entries(byOutcome) as Array<[keyof typeof byOutcome, number]>) {
    if (count > 0) attemptsWithOutcome(outcome).updateUnsafe(count, context)
  }
}

/** The finished jobs of a flush: their metrics, in one synchronous step, then their outcomes published. */
const report = (
  outcomes: DeliveryOutcomesShape,
  context: Context.Context<never>,
  done: ReadonlyArray<DeliveryOutcome>,
  latency: ReadonlyArray<number>
) =>
  Effect.suspend(() => {
    let deliveredCount = 0
    for (const outcome of done) if (outcome.status === "delivered") deliveredCount++
    if (deliveredCount > 0) jobsDelivered.updateUnsafe(deliveredCount, context)
    if (done.length > deliveredCount) jobsDead.updateUnsafe(done.length - deliveredCount, context)
    for (const seconds of latency) deliveryLatency.updateUnsafe(seconds, context)
    return outcomes.publishAll(done)
  })

/**
 * A write failed: its completions and attempts go back ahead of what finished since, for the next flush, which the
 * flusher tries again with backoff. Written once the store answers within the jobs' leases, they are not delivered a
 * second time (past their leases, they are).
 */
const putBack = (
  batch: CompletionBatch,
  completions: Array<Completion>,
  records: Array<AttemptRecord>,
  error: unknown
) => {
  batch.completions = completions.concat(batch.completions)
  batch.attempts = records.concat(batch.attempts)
  batch.counted = records.length
  batch.writeFailures += 1
  batch.workWaiting.openUnsafe()
  return batch.writeFailures === 1
    ? Effect.logError("could not write finished jobs; trying again until the store answers", error)
    : Effect.void
}

/** Takes what waits in the batch and writes it: completions and attempts to the outbox, then the metrics and outcomes. */
const makeFlush = (batch: CompletionBatch, config: CompletionsConfig, context: Context.Context<never>) => {
  const { outbox, outcomes, owner } = config
  const written = Effect.sync(() => {
    batch.writeFailures = 0
  })
  // Uninterruptible: the batch leaves the buffers before the write, so it must not be cut half-way.
  return Effect.uninterruptible(Effect.suspend(() => {
    const { attempts: records, completions, finished: done, latencies: latency } = batch
    if (completions.length === 0 && records.length === 0 && done.length === 0) return Effect.void
    batch.completions = []
    batch.writing = completions
    batch.attempts = []
    batch.finished = []
    batch.latencies = []
    countAttempts(batch.counted === 0 ? records : records.slice(batch.counted), context)
    batch.counted = 0
    const write = completions.length === 0 && records.length === 0 ?
      Effect.void :
      outbox.completeMany(owner, completions, records).pipe(
        Effect.tap((result) =>
          result.refused.length === 0 ? Effect.void : Effect.logWarning(
            `${result.refused.length} finished jobs had been taken over by another dispatcher; their outcome was not written`
          )
        ),
        Effect.tap(() => written),
        Effect.catch((error) => putBack(batch, completions, records, error)),
        Effect.ensuring(Effect.sync(() => {
          batch.writing = []
        }))
      )
    return Effect.andThen(write, report(outcomes, context, done, latency))
  }))
}

/** Flushes when something finished: after `flushDelay`, or at once when the batch is full; backs off after a failure. */
const makeFlusher = (batch: CompletionBatch, flush: Effect.Effect<void>, flushDelay: Duration.Duration) => {
  const { batchFull, workWaiting } = batch
  const flushDelayMillis = Math.max(1, Duration.toMillis(flushDelay))
  return Effect.gen(function*() {
    while (true) {
      yield* workWaiting.await
      yield* workWaiting.close
      // A batch that filled up during the last write goes at once.
      if (batch.completions.length < batch.flushSize) yield* Effect.timeoutOption(batchFull.await, flushDelay)
      yield* batchFull.close
      yield* flush
      if (batch.writeFailures > 0) {
        yield* Effect.sleep(Duration.millis(Math.min(2_000, flushDelayMillis * 2 ** Math.min(batch.writeFailures, 10))))
      }
    }
  })
}

/**
 * The dispatcher's batched writes: what finished since the last flush — jobs' completions, every attempt, metrics and
 * published outcomes — goes out together every `flushDelay`, or as soon as `flushSize` jobs have finished. A job is
 * booked here once; the caller forgets it (its lease) afterwards.
 */
export const makeCompletions = (config: CompletionsConfig) =>
  Effect.gen(function*() {
    const batch = yield* makeCompletionBatch(config.flushSize)
    // The metrics are updated in one synchronous step per flush, in the registry of the dispatcher's context.
    const context = yield* Effect.context<never>()
    const { attempt, deadLetter, deferred, delivered, failed } = makeBooking(batch)
    const flush = makeFlush(batch, config, context)
    const flusher = makeFlusher(batch, flush, config.flushDelay)
    // Finished jobs not yet written keep their leases renewed: a slow or failing store must not let them be taken over.
    const unwritten = (): Array<string> => {
      const ids: Array<string> = []
      for (const completion of batch.completions) ids.push(completion.jobId)
      for (const completion of batch.writing) ids.push(completion.jobId)
      return ids
    }
    return { attempt, delivered, deadLetter, failed, deferred, flush, flusher, unwritten }
  })

export type Completions = Effect.Success<ReturnType<typeof makeCompletions>>
