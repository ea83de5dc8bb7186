import { Duration, Effect, Latch } from "effect"
import type { Context } from "effect"
import { attemptsWithOutcome, deliveryLatency, jobsDead, jobsDelivered } from "../../metrics/Metrics.js"
import type { AttemptRecord as StoredAttemptRecord, ClaimedJob, Completion } from "../../store/Model.js"
import type { OutboxShape } from "../../store/Outbox.js"
import type { AttemptRecord } from "../AttemptRecord.js"
import type { AllEndpointsFailed, Deferred } from "../DeliveryResult.js"
import { persistStates } from "../EndpointState.js"
import type { DeliveryOutcome, DeliveryOutcomesShape } from "../Outcomes.js"

const storedOutcome = (outcome: AttemptRecord["outcome"]): StoredAttemptRecord["outcome"] => {
  switch (outcome) {
    case "Success":
      return "success"
    case "Retryable":
      return "retryable"
    case "Permanent":
      return "permanent"
    case "Aborted":
      return "aborted"
  }
}

const toStoredAttempt = (record: AttemptRecord): StoredAttemptRecord => ({
  jobId: record.jobId,
  url: record.url,
  attempt: record.attemptNumber,
  startedAt: record.startedAt,
  durationMs: record.durationMs,
  statusCode: record.status ?? null,
  error: record.error ?? null,
  outcome: storedOutcome(record.outcome),
  responseSnippet: record.responseSnippet ?? null
})

const countAttempts = (records: ReadonlyArray<StoredAttemptRecord>, context: Context.Context<never>) => {
  const byOutcome = { success: 0, retryable: 0, permanent: 0, aborted: 0 }
  for (const record of records) byOutcome[record.outcome] += 1
  for (const [outcome, count] of Object.entries(byOutcome) as Array<[keyof typeof byOutcome, number]>) {
    if (count > 0) attemptsWithOutcome(outcome).updateUnsafe(count, context)
  }
}

export interface CompletionsConfig {
  readonly owner: string
  readonly outbox: OutboxShape
  readonly outcomes: DeliveryOutcomesShape
  readonly flushDelay: Duration.Duration
  readonly flushSize: number
}

/**
 * The dispatcher's batched writes: what finished since the last flush — jobs' completions, every attempt, metrics and
 * published outcomes — goes out together every `flushDelay`, or as soon as `flushSize` jobs have finished. A job is
 * booked here once; the caller forgets it (its lease) afterwards.
 */
export const makeCompletions = (config: CompletionsConfig) =>
  Effect.gen(function*() {
    const { flushSize, outbox, outcomes, owner } = config
    let completions: Array<Completion> = []
    let attempts: Array<StoredAttemptRecord> = []
    let finished: Array<DeliveryOutcome> = []
    let latencies: Array<number> = []
    /** Writes of finished jobs failed in a row (the store cannot answer): logged once, tried again with backoff. */
    let writeFailures = 0
    /** Attempts at the head of `attempts` that a failed write put back: already counted in the metrics. */
    let counted = 0
    const flushDelayMillis = Math.max(1, Duration.toMillis(config.flushDelay))
    // The metrics are updated in one synchronous step per flush, in the registry of the dispatcher's context.
    const context = yield* Effect.context<never>()
    const workWaiting = yield* Latch.make(false)
    // Open when `flushSize` finished jobs wait: the flusher stops waiting for `flushDelay`.
    const batchFull = yield* Latch.make(false)

    const attempt = (record: AttemptRecord): void => {
      attempts.push(toStoredAttempt(record))
      workWaiting.openUnsafe()
    }

    const book = (completion: Completion, outcome: DeliveryOutcome): void => {
      if (completions.push(completion) === flushSize) batchFull.openUnsafe()
      finished.push(outcome)
      workWaiting.openUnsafe()
    }

    const delivered = (job: ClaimedJob, at: number, firstAttemptAt: number, url: string): void => {
      latencies.push(Math.max(0, at - job.createdAt) / 1000)
      book(
        { _tag: "Delivered", jobId: job.id, at, firstAttemptAt, sourceId: job.sourceId, createdAt: job.createdAt },
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
        completions.push({
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

    const report = (done: ReadonlyArray<DeliveryOutcome>, latency: ReadonlyArray<number>) =>
      Effect.suspend(() => {
        let deliveredCount = 0
        for (const outcome of done) if (outcome.status === "delivered") deliveredCount++
        if (deliveredCount > 0) jobsDelivered.updateUnsafe(deliveredCount, context)
        if (done.length > deliveredCount) jobsDead.updateUnsafe(done.length - deliveredCount, context)
        for (const seconds of latency) deliveryLatency.updateUnsafe(seconds, context)
        return outcomes.publishAll(done)
      })

    // Uninterruptible: the batch leaves the buffers before the write, so it must not be cut half-way.
    const flush = Effect.uninterruptible(Effect.suspend(() => {
      if (completions.length === 0 && attempts.length === 0 && finished.length === 0) return Effect.void
      const batch = completions
      const records = attempts
      const done = finished
      const latency = latencies
      completions = []
      attempts = []
      finished = []
      latencies = []
      countAttempts(counted === 0 ? records : records.slice(counted), context)
      counted = 0
      const write = batch.length === 0 && records.length === 0 ?
        Effect.void :
        outbox.completeMany(owner, batch, records).pipe(
          Effect.tap((result) =>
            result.refused.length === 0 ? Effect.void : Effect.logWarning(
              `${result.refused.length} finished jobs had been taken over by another dispatcher; their outcome was not written`
            )
          ),
          Effect.tap(() => Effect.sync(() => (writeFailures = 0))),
          Effect.catch((error) => {
            // Kept for the next flush, which the flusher tries again with backoff: written once the store answers
            // within the jobs' leases, they are not delivered a second time (past their leases, they are).
            completions = batch.concat(completions)
            attempts = records.concat(attempts)
            counted = records.length
            writeFailures += 1
            workWaiting.openUnsafe()
            return writeFailures === 1
              ? Effect.logError("could not write finished jobs; trying again until the store answers", error)
              : Effect.void
          })
        )
      return Effect.andThen(write, report(done, latency))
    }))

    const flusher = Effect.gen(function*() {
      while (true) {
        yield* workWaiting.await
        yield* workWaiting.close
        // A batch that filled up during the last write goes at once.
        if (completions.length < flushSize) yield* Effect.timeoutOption(batchFull.await, config.flushDelay)
        yield* batchFull.close
        yield* flush
        if (writeFailures > 0) {
          yield* Effect.sleep(Duration.millis(Math.min(2_000, flushDelayMillis * 2 ** Math.min(writeFailures, 10))))
        }
      }
    })

    return { attempt, delivered, deadLetter, failed, deferred, flush, flusher }
  })

export type Completions = Effect.Success<ReturnType<typeof makeCompletions>>
