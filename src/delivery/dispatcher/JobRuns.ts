import { Cause, Duration, Effect } from "effect"
import type { Clock, Fiber } from "effect"
import type { AttemptRecord } from "../../domain/AttemptRecord.js"
import type { WebhookSettings } from "../../domain/Settings.js"
import type { OutboxSignalShape } from "../../store/OutboxSignal.js"
import type { AttemptServices } from "../Attempt.js"
import { deliverWith } from "../Deliver.js"
import type { AllEndpointsFailed, Deferred, DeliveryResult } from "../DeliveryResult.js"
import { restoreStates } from "../EndpointState.js"
import { quickDeliveryMillis } from "../SourceMailboxes.js"
import type { Transport } from "../Transport.js"
import type { Completions } from "./Completions.js"
import type { Actors, Run } from "./EndpointActors.js"
import type { Held, Leases } from "./Leases.js"
import type { Settings } from "./Options.js"

export interface JobRunsConfig {
  readonly settings: Settings
  readonly leases: Leases
  readonly completions: Completions
  readonly actors: Actors
  readonly signal: OutboxSignalShape
  readonly clock: Clock.Clock
  /** The delivery's services, looked up once for every job. */
  readonly services: AttemptServices
  /** Starts a fiber in the dispatcher's scope, interruptible. */
  readonly fork: (effect: Effect.Effect<void, never, Transport>) => Fiber.Fiber<void, never>
}

/**
 * A job of the source failed an attempt or ended without a delivery. If that shrank its mailbox (`SourceMailboxes`),
 * the jobs it holds beyond its bound that no attempt has touched yet, newest first, go back to the store: an endpoint
 * that answered at once and then went down does not get `mailboxPerQuickSource` doomed attempts, each retried in
 * memory, where it had `mailboxPerSource` before. A delivery that was merely slow shrinks the mailbox too, but its
 * jobs are left to drain: the endpoint is up.
 */
const makeAttemptFailed = (leases: Leases, actors: Actors) => (sourceId: string): void => {
  if (leases.mailboxes.notQuick(sourceId)) actors.shed(sourceId)
}

/** Every attempt of every job goes to the batch; a failed one tells its source's mailbox. */
const makeRecordAttempt = (completions: Completions, leases: Leases, attemptFailed: (sourceId: string) => void) => {
  const recordAttempt = (record: AttemptRecord) =>
    Effect.sync(() => {
      completions.attempt(record)
      if (record.outcome !== "retryable" && record.outcome !== "permanent") return
      const entry = leases.held.get(record.jobId)
      if (entry !== undefined) attemptFailed(entry.job.sourceId)
    })
  return recordAttempt
}

/**
 * How a job's run ends: booked, and the job forgotten; or, for a mailbox's job whose retry is due within
 * `maxInlineDelay`, a wait in memory and back to its mailbox when it is due.
 */
const makeConclusions = (config: JobRunsConfig, attemptFailed: (sourceId: string) => void) => {
  const { actors, clock, completions, leases, settings, signal } = config
  const { mailboxes } = leases
  const maxInlineMillis = Duration.toMillis(settings.maxInlineDelay)

  // A retry due soon waits in memory on a timer fiber (no worker, no permit), then goes back to its mailbox.
  const waitForRetry = (run: Run, result: Deferred): void => {
    const entry = run.held
    entry.fiber = config.fork(
      Effect.sleep(Duration.millis(Math.max(0, result.nextAttemptAt - clock.currentTimeMillisUnsafe()))).pipe(
        Effect.andThen(Effect.sync(() => {
          entry.fiber = undefined
          if (entry.lost) leases.release(entry)
          else actors.post(run)
        })),
        Effect.onInterrupt(() => Effect.sync(() => leases.release(entry)))
      )
    )
  }

  /** The delivery's result: delivered, or a retry in memory or in the store. `fresh`: a single-URL job's first run. */
  const concluded = (run: Run, result: DeliveryResult, startedAt: number, firstAttemptAt: number, fresh: boolean) => {
    const entry = run.held
    const job = entry.job
    const now = clock.currentTimeMillisUnsafe()
    // Its worker goes on with other jobs: a lost lease must not stop it any more.
    entry.fiber = undefined
    if (result._tag === "Delivered") {
      if (fresh && result.attempts === 1) {
        if (now - startedAt > quickDeliveryMillis) mailboxes.notQuick(job.sourceId)
        else if (mailboxes.deliveredQuickly(job.sourceId)) signal.unsafeNotify()
      }
      completions.delivered(job, now, firstAttemptAt, result.url)
      return leases.release(entry)
    }
    attemptFailed(job.sourceId)
    if (run.settings.endpoints.length === 1 && !actors.stopping && result.nextAttemptAt - now <= maxInlineMillis) {
      return waitForRetry({ ...run, firstAttemptAt: result.firstAttemptAt, states: result.endpoints }, result)
    }
    completions.deferred(job, result)
    leases.release(entry)
  }

  /** The delivery failed: every URL failed (dead), or it was interrupted or died (forgotten). */
  const failedWith = (run: Run, cause: Cause.Cause<AllEndpointsFailed>): Effect.Effect<void> => {
    const entry = run.held
    const job = entry.job
    const failure = Cause.findErrorOption(cause)
    if (failure._tag === "Some") {
      attemptFailed(job.sourceId)
      completions.failed(job, clock.currentTimeMillisUnsafe(), failure.value)
      leases.release(entry)
      return Effect.logWarning(`message dead-lettered: ${failure.value.message}`).pipe(
        Effect.annotateLogs({ jobId: job.id, messageId: job.messageId, sourceId: job.sourceId })
      )
    }
    leases.release(entry)
    return Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.logError("delivery job failed unexpectedly", cause).pipe(
        Effect.annotateLogs({ jobId: job.id, messageId: job.messageId })
      )
  }

  return { concluded, failedWith }
}

/**
 * Each held job's run: `deliver` — the one delivery program — and what follows from its result. A mailbox's job runs
 * in its endpoint's worker until it is delivered, dead, or waits for a retry: a retry due within `maxInlineDelay`
 * waits in memory (a timer, not a worker) and goes back to the mailbox with the job's progress, a later one goes back
 * to the store. A job with several URLs races them in a fiber of its own, its retries waiting in that fiber.
 */
export const makeJobRuns = (config: JobRunsConfig) => {
  const { actors, clock, completions, leases, services, settings } = config
  const attemptFailed = makeAttemptFailed(leases, actors)
  const recordAttempt = makeRecordAttempt(completions, leases, attemptFailed)
  const { concluded, failedWith } = makeConclusions(config, attemptFailed)

  // A mailbox's job never sleeps in its worker: a retry comes back as `Deferred` and waits in `waitForRetry`.
  // The gates are the endpoints of the job's source and destination (REFERENCE §7b).
  const mailboxOptions = (job: Run["held"]["job"]) => ({
    recordAttempt,
    maxInlineDelay: Duration.zero,
    gate: actors.gateOf(job)
  })
  const raceOptions = (job: Run["held"]["job"]) => ({
    recordAttempt,
    maxInlineDelay: settings.maxInlineDelay,
    gate: actors.gateOf(job)
  })

  /**
   * The delivery program for one held job, and its conclusion. Never fails: an interrupted job is forgotten. Built when
   * the job starts (it reads the clock): in its worker's step, or inside the fiber forked for it.
   */
  const deliverJob = (run: Run): Effect.Effect<void> => {
    const job = run.held.job
    const startedAt = clock.currentTimeMillisUnsafe()
    const firstAttemptAt = run.firstAttemptAt ?? job.firstAttemptAt ?? startedAt
    const single = run.settings.endpoints.length === 1
    const delivery = deliverWith(services, {
      jobId: job.id,
      messageId: job.messageId,
      body: job.body,
      settings: run.settings,
      firstAttemptAt,
      endpointStates: run.states,
      traceparent: job.traceparent
    }, single ? mailboxOptions(job) : raceOptions(job))
    const fresh = single && run.states.length === 0
    return Effect.matchCauseEffect(delivery, {
      // The conclusion is synchronous bookkeeping: run in the fiber's step, not as a step of its own.
      onSuccess: (result) => {
        concluded(run, result, startedAt, firstAttemptAt, fresh)
        return Effect.void
      },
      onFailure: (cause) => failedWith(run, cause)
    })
  }

  /** A job admitted from a claim: to its endpoint's mailbox, or its own fiber racing several URLs. */
  const admit = (entry: Held, webhooks: WebhookSettings): void => {
    const run: Run = {
      held: entry,
      settings: webhooks,
      firstAttemptAt: undefined,
      states: restoreStates(entry.job.endpointState)
    }
    if (webhooks.endpoints.length > 1) entry.fiber = config.fork(Effect.suspend(() => deliverJob(run)))
    else actors.post(run)
  }

  /** A job whose source cannot be delivered to: dead at once, without an attempt. */
  const deadLetter = (entry: Held, reason: string): void => {
    attemptFailed(entry.job.sourceId)
    completions.deadLetter(entry.job, clock.currentTimeMillisUnsafe(), reason)
    leases.release(entry)
  }

  return { admit, deadLetter, runJob: deliverJob }
}

export type JobRuns = ReturnType<typeof makeJobRuns>
