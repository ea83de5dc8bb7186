import { Cause, Effect } from "effect"
import type { Clock, Fiber } from "effect"
import type { WebhookSettings } from "../../domain/Settings.js"
import { FifoGate } from "../../runtime/FifoGate.js"
import type { OutboxSignalShape } from "../../store/OutboxSignal.js"
import type { AttemptRecord } from "../AttemptRecord.js"
import { deliver } from "../Deliver.js"
import type { EndpointGateFor } from "../Deliver.js"
import type { DeliveryResult, EndpointState } from "../DeliveryResult.js"
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
  /** Each URL's progress from earlier runs (the store's `endpoint_state`); empty for a job never attempted. */
  readonly states: ReadonlyArray<EndpointState>
}

/** One webhook URL: its mailbox, and the gate that lets at most `concurrencyPerEndpoint` attempts on it run at once. */
interface Actor {
  readonly gate: FifoGate
  readonly mailbox: Array<Run>
  head: number
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
 * The endpoint actors: each webhook URL has a mailbox of single-URL jobs and a FIFO gate of `concurrencyPerEndpoint`
 * permits. A job leaves the mailbox when a permit is free, and only then gets a fiber, which runs `deliver` — the one
 * delivery program: the attempt, the retries the schedule plans within `maxInlineDelay` (asleep, holding no permit),
 * and the conclusion. Every attempt passes its URL's gate, so the retries of the mailbox's jobs and the attempts of
 * jobs with several URLs (a fiber each from the start, racing their URLs) share the endpoint's limit; a permit that
 * nobody queued for starts the mailbox's next job. A slow or failing endpoint holds its own permits only.
 */
export const makeActors = (config: ActorsConfig) => {
  const { clock, completions, leases, settings, signal } = config
  const { mailboxes } = leases
  const actors = new Map<string, Actor>()
  let stopping = false

  const actorFor = (url: string): Actor => {
    let actor = actors.get(url)
    if (actor === undefined) {
      const created: Actor = {
        gate: new FifoGate(settings.concurrencyPerEndpoint, () => pump(created)),
        mailbox: [],
        head: 0
      }
      actors.set(url, created)
      actor = created
    }
    return actor
  }

  const sharedGate: EndpointGateFor = (url) => actorFor(url).gate.withPermit

  const take = (actor: Actor): void => {
    actor.mailbox[actor.head++] = undefined as never
    if (actor.head === actor.mailbox.length) {
      actor.mailbox.length = 0
      actor.head = 0
    } else if (actor.head > 1024 && actor.head * 2 > actor.mailbox.length) {
      actor.mailbox.splice(0, actor.head)
      actor.head = 0
    }
  }

  /** Starts the mailbox's next jobs while the endpoint has a free permit. */
  const pump = (actor: Actor): void => {
    while (!stopping && actor.head < actor.mailbox.length) {
      const run = actor.mailbox[actor.head]!
      if (run.held.lost) {
        take(actor)
        leases.release(run.held)
        continue
      }
      if (!actor.gate.tryTake()) return
      take(actor)
      startRun(actor, run)
    }
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

  const options = (gate: EndpointGateFor) => ({ recordAttempt, maxInlineDelay: settings.maxInlineDelay, gate })

  /** How the job's run ended, booked; then the job is forgotten. `fresh`: a single-URL job's first run. */
  const conclude = (entry: Held, result: DeliveryResult, startedAt: number, firstAttemptAt: number, fresh: boolean) => {
    const job = entry.job
    const now = clock.unsafeCurrentTimeMillis()
    if (result._tag === "Delivered") {
      if (fresh && result.attempts === 1) {
        if (now - startedAt > quickDeliveryMillis) mailboxes.notQuick(job.sourceId)
        else if (mailboxes.deliveredQuickly(job.sourceId)) signal.unsafeNotify()
      }
      completions.delivered(job, now, firstAttemptAt, result.url)
    } else {
      attemptFailed(job.sourceId)
      completions.deferred(job, result)
    }
    leases.release(entry)
  }

  /** The delivery program for one held job, and its conclusion. Never fails: an interrupted job is forgotten. */
  const deliverJob = (entry: Held, run: Run, gate: EndpointGateFor, fresh: boolean) =>
    Effect.suspend(() => {
      const job = entry.job
      const startedAt = clock.unsafeCurrentTimeMillis()
      const firstAttemptAt = job.firstAttemptAt ?? startedAt
      const delivery = deliver({
        jobId: job.id,
        messageId: job.messageId,
        body: job.body,
        settings: run.settings,
        firstAttemptAt,
        endpointStates: run.states
      }, options(gate))
      return Effect.matchCauseEffect(delivery, {
        onSuccess: (result) => Effect.sync(() => conclude(entry, result, startedAt, firstAttemptAt, fresh)),
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

  /** A single-URL job leaves its mailbox with a permit the pump took for it: its first attempt uses it. */
  const startRun = (actor: Actor, run: Run): void => {
    let owned = true
    const gate: EndpointGateFor = () => (effect) => {
      if (!owned) return actor.gate.withPermit(effect)
      return Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          owned = false
          return Effect.ensuring(restore(effect), actor.gate.release)
        })
      )
    }
    // Stopped before its first attempt (lease lost, shutdown): the permit goes back.
    const giveBack = Effect.sync(() => {
      if (!owned) return
      owned = false
      actor.gate.giveBack()
    })
    run.held.fiber = config.fork(
      Effect.ensuring(deliverJob(run.held, run, gate, run.states.length === 0), giveBack)
    )
  }

  /** A job admitted from a claim: to its endpoint's mailbox, or its own fiber racing several URLs. */
  const post = (entry: Held, webhooks: WebhookSettings): void => {
    const run: Run = { held: entry, settings: webhooks, states: restoreStates(entry.job.endpointState) }
    if (webhooks.endpoints.length > 1) {
      entry.fiber = config.fork(deliverJob(entry, run, sharedGate, false))
      return
    }
    const actor = actorFor(webhooks.endpoints[0]!.url)
    actor.mailbox.push(run)
    pump(actor)
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

  return { post, deadLetter, stop }
}

export type Actors = ReturnType<typeof makeActors>
