import { Cause, Duration, Effect } from "effect"
import type { Clock, Fiber } from "effect"
import type { WebhookSettings } from "../../domain/Settings.js"
import { FifoGate } from "../../runtime/FifoGate.js"
import type { OutboxSignalShape } from "../../store/OutboxSignal.js"
import type { AttemptRecord } from "../AttemptRecord.js"
import { deliver } from "../Deliver.js"
import type { EndpointGateFor } from "../Deliver.js"
import type { Deferred, DeliveryResult, EndpointState } from "../DeliveryResult.js"
import { restoreStates } from "../EndpointState.js"
import { quickDeliveryMillis } from "../SourceMailboxes.js"
import type { Transport } from "../Transport.js"
import type { Completions } from "./Completions.js"
import type { Held, Leases } from "./Leases.js"
import type { Settings } from "./Options.js"

/** A job waiting in its endpoint's mailbox for a permit. */
interface Run {
  readonly held: Held
  readonly settings: WebhookSettings
  /** The job's first attempt, once made in this process (a retry waiting in memory); else the stored one. */
  readonly firstAttemptAt: number | undefined
  /** Each URL's progress from earlier runs (the store's `endpoint_state`); empty for a job never attempted. */
  readonly states: ReadonlyArray<EndpointState>
}

/** One webhook URL: its mailbox, its workers (at most `concurrencyPerEndpoint`) and the gate its attempts pass. */
interface Actor {
  readonly gate: FifoGate
  readonly mailbox: Array<Run>
  head: number
  workers: number
  /** Workers forked that have not taken their first job yet: the queued jobs they will take need no other worker. */
  starting: number
}

export interface ActorsConfig {
  readonly settings: Settings
  readonly leases: Leases
  readonly completions: Completions
  readonly signal: OutboxSignalShape
  readonly clock: Clock.Clock
  /** Starts a job's fiber in the dispatcher's scope, interruptible. */
  readonly fork: (effect: Effect.Effect<void, never, Transport>) => Fiber.RuntimeFiber<void, never>
}

/**
 * The endpoint actors: each webhook URL has a mailbox of single-URL jobs, up to `concurrencyPerEndpoint` worker fibers
 * that take its jobs in turn, and a FIFO gate of as many permits. A worker runs each job through `deliver` — the one
 * delivery program — until it is delivered, dead, or waits for a retry: a retry due within `maxInlineDelay` waits in
 * memory (a timer, not a worker) and goes back to the mailbox with the job's progress, a later one goes back to the
 * store. Workers live as long as their mailbox has work, so a job costs no fiber of its own. Every attempt passes its
 * URL's gate, so the mailbox's jobs and the attempts of jobs with several URLs (a fiber each, racing their URLs,
 * retries waiting in that fiber) share the endpoint's limit. A slow or failing endpoint holds its own workers only.
 */
export const makeActors = (config: ActorsConfig) => {
  const { clock, completions, leases, settings, signal } = config
  const { mailboxes } = leases
  const actors = new Map<string, Actor>()
  let stopping = false

  const actorFor = (url: string): Actor => {
    let actor = actors.get(url)
    if (actor === undefined) {
      actor = { gate: new FifoGate(settings.concurrencyPerEndpoint), mailbox: [], head: 0, workers: 0, starting: 0 }
      actors.set(url, actor)
    }
    return actor
  }

  const sharedGate: EndpointGateFor = (url) => actorFor(url).gate.withPermit

  /** The mailbox's next job, or undefined when it is empty (or the dispatcher stops). Lost jobs are dropped. */
  const take = (actor: Actor): Run | undefined => {
    while (!stopping && actor.head < actor.mailbox.length) {
      const run = actor.mailbox[actor.head]!
      actor.mailbox[actor.head++] = undefined as never
      if (actor.head === actor.mailbox.length) {
        actor.mailbox.length = 0
        actor.head = 0
      } else if (actor.head > 1024 && actor.head * 2 > actor.mailbox.length) {
        actor.mailbox.splice(0, actor.head)
        actor.head = 0
      }
      if (!run.held.lost) return run
      leases.release(run.held)
    }
    return undefined
  }

  /**
   * A job of the source failed an attempt or ended without a delivery. If that shrank its mailbox (`SourceMailboxes`),
   * the jobs it holds beyond its bound that no attempt has touched yet, newest first, go back to the store: an endpoint
   * that answered at once and then went down does not get `mailboxPerQuickSource` doomed attempts, each retried in
   * memory, where it had `mailboxPerSource` before. A delivery that was merely slow shrinks the mailbox too, but its
   * jobs are left to drain: the endpoint is up.
   */
  const attemptFailed = (sourceId: string): void => {
    if (!mailboxes.notQuick(sourceId)) return
    let excess = mailboxes.count(sourceId) - mailboxes.bound(sourceId)
    if (excess <= 0) return
    const shed: Array<string> = []
    const untouched = (run: Run) => run.held.job.sourceId === sourceId && run.states.length === 0 && !run.held.lost
    for (const actor of actors.values()) {
      if (excess <= 0) break
      let dropped = 0
      for (let i = actor.mailbox.length - 1; i >= actor.head && excess > 0; i--) {
        const run = actor.mailbox[i]!
        if (!untouched(run)) continue
        shed.push(run.held.job.id)
        leases.release(run.held)
        actor.mailbox[i] = undefined as never
        dropped++
        excess--
      }
      if (dropped === 0) continue
      const kept = actor.mailbox.slice(actor.head).filter((run) => run !== undefined)
      actor.mailbox.length = 0
      actor.head = 0
      for (const run of kept) actor.mailbox.push(run)
    }
    if (shed.length > 0) config.fork(leases.giveBack(shed, "jobs beyond a shrunk mailbox"))
  }

  // Every attempt of every job goes to the batch; a failed one tells its source's mailbox.
  const recordAttempt = (record: AttemptRecord) =>
    Effect.sync(() => {
      completions.attempt(record)
      if (record.outcome !== "Retryable" && record.outcome !== "Permanent") return
      const entry = leases.held.get(record.jobId)
      if (entry !== undefined) attemptFailed(entry.job.sourceId)
    })

  const maxInlineMillis = Duration.toMillis(settings.maxInlineDelay)
  // A mailbox's job never sleeps in its worker: a retry comes back as `Deferred` and waits in `waitForRetry`.
  const mailboxOptions = { recordAttempt, maxInlineDelay: Duration.zero, gate: sharedGate }
  const raceOptions = { recordAttempt, maxInlineDelay: settings.maxInlineDelay, gate: sharedGate }

  /**
   * How the job's run ended: booked, and the job forgotten; or, for a mailbox's job whose retry is due within
   * `maxInlineDelay`, back to its mailbox when it is due. `fresh`: a single-URL job's first run.
   */
  const conclude = (run: Run, result: DeliveryResult, startedAt: number, firstAttemptAt: number, fresh: boolean) => {
    const entry = run.held
    const job = entry.job
    const now = clock.unsafeCurrentTimeMillis()
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
    if (run.settings.endpoints.length === 1 && !stopping && result.nextAttemptAt - now <= maxInlineMillis) {
      return waitForRetry({ ...run, firstAttemptAt: result.firstAttemptAt, states: result.endpoints }, result)
    }
    completions.deferred(job, result)
    leases.release(entry)
  }

  // A retry due soon waits in memory on a timer fiber (no worker, no permit), then goes back to its mailbox.
  const waitForRetry = (run: Run, result: Deferred): void => {
    const entry = run.held
    entry.fiber = config.fork(
      Effect.sleep(Duration.millis(Math.max(0, result.nextAttemptAt - clock.unsafeCurrentTimeMillis()))).pipe(
        Effect.zipRight(Effect.sync(() => {
          entry.fiber = undefined
          if (entry.lost) leases.release(entry)
          else post(run)
        })),
        Effect.onInterrupt(() => Effect.sync(() => leases.release(entry)))
      )
    )
  }

  /** The delivery program for one held job, and its conclusion. Never fails: an interrupted job is forgotten. */
  const deliverJob = (run: Run): Effect.Effect<void, never, Transport> =>
    Effect.suspend(() => {
      const entry = run.held
      const job = entry.job
      const startedAt = clock.unsafeCurrentTimeMillis()
      const firstAttemptAt = run.firstAttemptAt ?? job.firstAttemptAt ?? startedAt
      const single = run.settings.endpoints.length === 1
      const delivery = deliver({
        jobId: job.id,
        messageId: job.messageId,
        body: job.body,
        settings: run.settings,
        firstAttemptAt,
        endpointStates: run.states
      }, single ? mailboxOptions : raceOptions)
      const fresh = single && run.states.length === 0
      return Effect.matchCauseEffect(delivery, {
        onSuccess: (result) => Effect.sync(() => conclude(run, result, startedAt, firstAttemptAt, fresh)),
        onFailure: (cause) => {
          const failure = Cause.failureOption(cause)
          if (failure._tag === "Some") {
            attemptFailed(job.sourceId)
            completions.failed(job, clock.unsafeCurrentTimeMillis(), failure.value)
          }
          leases.release(entry)
          return failure._tag === "Some" || Cause.isInterruptedOnly(cause)
            ? Effect.void
            : Effect.logError("delivery job failed unexpectedly", cause).pipe(
              Effect.annotateLogs({ jobId: job.id, messageId: job.messageId })
            )
        }
      })
    })

  /**
   * One of the endpoint's workers: takes the mailbox's jobs one after another and delivers each, while there are any.
   * A job's `fiber` is its worker while it runs there: the lease renewer interrupts it if the job is taken over, and
   * a worker that stops early leaves its place to a new one.
   */
  const worker = (actor: Actor): Effect.Effect<void, never, Transport> =>
    Effect.withFiberRuntime((fiber) => {
      actor.starting -= 1
      const next: Effect.Effect<void, never, Transport> = Effect.suspend(() => {
        const run = take(actor)
        if (run === undefined) return Effect.void
        run.held.fiber = fiber
        return Effect.zipRight(deliverJob(run), next)
      })
      return next
    })

  const startWorkers = (actor: Actor): void => {
    while (
      !stopping && actor.workers < settings.concurrencyPerEndpoint &&
      actor.mailbox.length - actor.head > actor.starting
    ) {
      actor.workers += 1
      actor.starting += 1
      config.fork(Effect.ensuring(
        worker(actor),
        Effect.sync(() => {
          actor.workers -= 1
          startWorkers(actor)
        })
      ))
    }
  }

  const post = (run: Run): void => {
    const actor = actorFor(run.settings.endpoints[0]!.url)
    actor.mailbox.push(run)
    startWorkers(actor)
  }

  /** A job admitted from a claim: to its endpoint's mailbox, or its own fiber racing several URLs. */
  const admit = (entry: Held, webhooks: WebhookSettings): void => {
    const run: Run = {
      held: entry,
      settings: webhooks,
      firstAttemptAt: undefined,
      states: restoreStates(entry.job.endpointState)
    }
    if (webhooks.endpoints.length > 1) entry.fiber = config.fork(deliverJob(run))
    else post(run)
  }

  /** A job whose source cannot be delivered to: dead at once, without an attempt. */
  const deadLetter = (entry: Held, reason: string): void => {
    attemptFailed(entry.job.sourceId)
    completions.deadLetter(entry.job, clock.unsafeCurrentTimeMillis(), reason)
    leases.release(entry)
  }

  /** Shutdown: no job leaves a mailbox any more; the job fibers are interrupted by the caller. */
  const stop = (): void => {
    stopping = true
  }

  return { admit, deadLetter, stop }
}

export type Actors = ReturnType<typeof makeActors>
