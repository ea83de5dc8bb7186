import { Duration, Effect, Exit, Fiber, FiberSet, Layer, Option, Runtime } from "effect"
import { randomUUID } from "node:crypto"
import type { WebhookSettings } from "../domain/Settings.js"
import { signingSecret } from "../domain/Settings.js"
import { attemptsWithOutcome, deliveryLatency, jobsDead, jobsDelivered } from "../metrics/Metrics.js"
import { IngestPressure } from "../overload/IngestPressure.js"
import { FifoGate } from "../runtime/FifoGate.js"
import { KeyedSlots } from "../runtime/Slots.js"
import type { AttemptRecord as StoredAttemptRecord, ClaimedJob, Completion } from "../store/Model.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Store } from "../store/Store.js"
import { abortedRecord, logTimeout, prepareEndpoint, settled } from "./Attempt.js"
import type { AttemptInput, PreparedEndpoint, Settled } from "./Attempt.js"
import type { AttemptRecord } from "./AttemptRecord.js"
import { continueAfterAttempt, deliver } from "./Deliver.js"
import type { DeliveryJob } from "./Deliver.js"
import type { AllEndpointsFailed, Deferred, DeliveryResult, EndpointState } from "./DeliveryResult.js"
import { persistStates, restoreStates } from "./EndpointState.js"
import { DeliveryOutcomes } from "./Outcomes.js"
import type { DeliveryOutcome } from "./Outcomes.js"
import { deadline } from "./RetryPolicy.js"
import { signatureFor } from "./Signature.js"
import { quickDeliveryMillis, SourceMailboxes } from "./SourceMailboxes.js"
import { Transport } from "./Transport.js"
import type { TransportExit, TransportRequest } from "./Transport.js"

export interface DispatcherOptions {
  /** Lease owner id, unique per process start. Default: a random UUID. */
  readonly owner?: string | undefined
  /** Requests in flight to one webhook URL at once (SPEC: default 16). */
  readonly concurrencyPerEndpoint?: number | undefined
  /**
   * Jobs of one source held in memory at once: the bound of that source's mailbox. Default 256. A source whose
   * endpoint answers at once may hold `mailboxPerQuickSource` (`SourceMailboxes`).
   */
  readonly mailboxPerSource?: number | undefined
  /**
   * The bound of a source whose last `mailboxPerSource` jobs were each delivered at their first attempt within 50 ms:
   * its claims bring more jobs at a time. Default 4 × `mailboxPerSource`, at most half of `maxJobsInMemory`.
   */
  readonly mailboxPerQuickSource?: number | undefined
  /** Jobs held in memory in all: the dispatcher's memory bound whatever the backlog on disk. Default 2 048. */
  readonly maxJobsInMemory?: number | undefined
  /** Jobs claimed per store round trip at most. Default 512. */
  readonly claimBatch?: number | undefined
  /** How long a claim is held before another process may take the job over. Default 60 s; renewed at a third. */
  readonly lease?: Duration.DurationInput | undefined
  /** How long the dispatcher sleeps when the outbox has nothing due (ingest in this process wakes it at once). */
  readonly idlePoll?: Duration.DurationInput | undefined
  /** A retry due later than this goes back to the store instead of waiting in memory. Default 5 s. */
  readonly maxInlineDelay?: Duration.DurationInput | undefined
  /** How long finished jobs wait to be written together (one transaction for all). Default 20 ms. */
  readonly flushDelay?: Duration.DurationInput | undefined
  /** Finished jobs that are written at once, without waiting for `flushDelay`: a bound on one transaction. Default 512. */
  readonly flushSize?: number | undefined
  /**
   * How long a claim may be held back while ingest saturates this process (`IngestPressure`, when the context has
   * it); after that one claim goes out anyway, so that a sustained load slows delivery but never stops it. `false`:
   * never held back. Default 500 ms.
   */
  readonly maxIngestYield?: Duration.DurationInput | false | undefined
}

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

/** A claimed job while this dispatcher holds it. */
interface Held {
  readonly job: ClaimedJob
  /** The fiber working on the job now (its turn, its own fiber, or its retry timer); none while queued. */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** Aborts the job's attempt in flight on the fiberless path (records it as aborted and releases the job). */
  abort: (() => void) | undefined
  /** Its lease was taken over by another dispatcher: drop it wherever it is. */
  lost: boolean
}

/** A single-URL job in an endpoint's mailbox: fresh from a claim, or due again after an in-memory retry wait. */
interface Run {
  readonly held: Held
  readonly settings: WebhookSettings
  readonly firstAttemptAt: number | undefined
  readonly states: ReadonlyArray<EndpointState>
}

/** One webhook URL: its mailbox and how many of its jobs are being worked on (at most the endpoint's concurrency). */
interface Actor {
  readonly url: string
  readonly mailbox: Array<Run>
  head: number
  busy: number
  /** `pump` is running: a job that ends synchronously inside it does not start another pump (no recursion). */
  pumping: boolean
  /** A `pump` is queued (`pumpSoon`). */
  pumpDue: boolean
}

/**
 * The dispatcher: claims due jobs from the store under a lease and delivers each with `deliver`.
 *
 * It is an actor system keyed by endpoint. Each webhook URL is an actor: a mailbox of jobs of which at most
 * `concurrencyPerEndpoint` are worked on at once. A fresh job's first attempt — nearly every delivery — runs without a
 * fiber: the request is started with the transport's callback (`Transport.start`), and a 2xx answer is booked in the
 * callback, which then starts the mailbox's next job. Everything else (a failed attempt, a resumed job, an endpoint whose
 * permits the multi-URL jobs hold) goes on in a fiber through `deliver`, with the same rules. A job whose attempt asks
 * for a retry within `maxInlineDelay` waits in memory (a timer, not a slot) and goes back to its mailbox when due; a
 * later retry goes back to the store with the job's per-URL progress, so the 4 h window and the backoff survive
 * restarts. A job with several URLs races them in a fiber of its own (`deliver`), each attempt passing its URL's gate:
 * the same limit the mailbox's jobs hold. Each source has a mailbox bound: a source whose jobs fill it is left out of
 * the next claims, so a slow or failing endpoint never holds the memory or the slots the others need. The bound of a
 * source whose endpoint answers at once grows, so that its claims bring more jobs each (`SourceMailboxes`).
 *
 * Per-job bookkeeping is batched: source settings are read once per claim, and finished jobs, their attempts, metrics
 * and published outcomes go out together every `flushDelay`, or as soon as `flushSize` jobs have finished.
 *
 * On shutdown the fibers are interrupted and the fiberless attempts aborted (requests aborted, attempts recorded), the
 * last batch is written and every lease still held is released.
 */
export const make = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* Store
    const signal = yield* OutboxSignal
    const outcomes = yield* DeliveryOutcomes
    const clock = yield* Effect.clock
    const sources = makeSourceCache(store)

    const owner = options.owner ?? randomUUID()
    const concurrencyPerEndpoint = Math.max(1, options.concurrencyPerEndpoint ?? 16)
    const mailboxPerSource = Math.max(1, options.mailboxPerSource ?? 256)
    const maxJobsInMemory = options.maxJobsInMemory ?? 2048
    const mailboxes = new SourceMailboxes(
      mailboxPerSource,
      Math.max(mailboxPerSource, Math.min(options.mailboxPerQuickSource ?? 4 * mailboxPerSource, maxJobsInMemory >> 1))
    )
    const claimBatch = Math.min(options.claimBatch ?? 512, maxJobsInMemory)
    const leaseMillis = Duration.toMillis(Duration.decode(options.lease ?? Duration.seconds(60)))
    const idlePoll = options.idlePoll ?? Duration.millis(200)
    const idlePollMillis = Duration.toMillis(Duration.decode(idlePoll))
    const maxInlineDelay = options.maxInlineDelay ?? Duration.seconds(5)
    const maxInlineMillis = Duration.toMillis(Duration.decode(maxInlineDelay))
    const flushDelay = options.flushDelay ?? Duration.millis(20)
    const flushDelayMillis = Math.max(1, Duration.toMillis(Duration.decode(flushDelay)))
    const flushSize = Math.max(1, options.flushSize ?? 512)
    const maxIngestYield = options.maxIngestYield ?? Duration.millis(500)
    const pressure = yield* Effect.serviceOption(IngestPressure)
    const yieldToIngest = maxIngestYield === false || Option.isNone(pressure)
      ? Effect.void
      : pressure.value.yieldToIngest(maxIngestYield)

    const held = new KeyedSlots<string, Held>()
    const gates = new Map<string, FifoGate>()
    const actors = new Map<string, Actor>()
    let stopping = false

    // What finished since the last flush: written, counted and published together.
    let completions: Array<Completion> = []
    let attempts: Array<StoredAttemptRecord> = []
    let finished: Array<DeliveryOutcome> = []
    let latencies: Array<number> = []
    /** Writes of finished jobs failed in a row (the store cannot answer): logged once, tried again with backoff. */
    let writeFailures = 0
    const workWaiting = yield* Effect.makeLatch(false)
    // Open when `flushSize` finished jobs wait: the flusher stops waiting for `flushDelay`.
    const batchFull = yield* Effect.makeLatch(false)

    const fibers = yield* FiberSet.make<unknown, never>()
    // Forks from synchronous code into the set. The runtime is captured here, inside the layer's acquisition, which is
    // uninterruptible: the forked fibers must be made interruptible again, or nothing could stop them.
    const forkIn = yield* FiberSet.runtime(fibers)<Transport>()
    const runFork = <A>(effect: Effect.Effect<A, never, Transport>) => forkIn(Effect.interruptible(effect))

    const gate = (key: string): FifoGate => {
      let endpoint = gates.get(key)
      if (endpoint === undefined) {
        endpoint = new FifoGate(concurrencyPerEndpoint)
        gates.set(key, endpoint)
      }
      return endpoint
    }

    // Every attempt passes its URL's gate: the endpoint actor's concurrency limit, shared by its mailbox's jobs and by the
    // attempts of jobs with several URLs.
    const endpointGate = (url: string) => gate(url).withPermit

    const keepAttempt = (record: AttemptRecord): void => {
      attempts.push(toStoredAttempt(record))
      workWaiting.unsafeOpen()
    }
    const recordAttempt = (record: AttemptRecord) => Effect.sync(() => keepAttempt(record))

    const claimThreshold = Math.max(1, Math.floor(claimBatch / 4))

    // Forgets a job. Rings the claimer only when another claim is worth a round trip: enough room in all, or a full
    // mailbox half empty again. Ringing on every finished job would claim one job per query.
    const release = (entry: Held): void => {
      if (held.get(entry.job.id) !== entry) return
      held.delete(entry.job.id)
      const halfEmpty = mailboxes.remove(entry.job.sourceId)
      if (maxJobsInMemory - held.size === claimThreshold || halfEmpty) signal.unsafeNotify()
    }

    /**
     * A job of the source failed (a retry, a dead letter). If that shrank its mailbox (`SourceMailboxes`), the jobs it
     * holds beyond its bound that no attempt has touched yet, newest first, go back to the store (their leases
     * released): an endpoint that answered at once and then went down does not get `mailboxPerQuickSource` doomed
     * attempts, each retried in memory, where it had `mailboxPerSource` before. A delivery that was merely slow shrinks
     * the mailbox too, but its jobs are left to drain: the endpoint is up.
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
          release(run.held)
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
      if (shed.length === 0) return
      runFork(
        store.releaseLeases(owner, shed).pipe(
          Effect.catchAll((error) =>
            Effect.logError("could not hand jobs back to the outbox; they wait for their lease to lapse", error)
          )
        )
      )
    }

    const finish = (entry: Held, completion: Completion): void => {
      if (completions.push(completion) === flushSize) batchFull.unsafeOpen()
      release(entry)
      workWaiting.unsafeOpen()
    }

    const delivered = (entry: Held, at: number, firstAttemptAt: number, url: string): void => {
      const job = entry.job
      finish(entry, {
        _tag: "Delivered",
        jobId: job.id,
        at,
        firstAttemptAt,
        sourceId: job.sourceId,
        createdAt: job.createdAt
      })
      latencies.push(Math.max(0, at - job.createdAt) / 1000)
      finished.push({
        jobId: job.id,
        sourceId: job.sourceId,
        messageId: job.messageId,
        kind: job.kind,
        status: "delivered",
        at,
        url
      })
    }

    const dead = (entry: Held, completion: Extract<Completion, { _tag: "Dead" }>): void => {
      const job = entry.job
      attemptFailed(job.sourceId)
      finish(entry, completion)
      finished.push({
        jobId: job.id,
        sourceId: job.sourceId,
        messageId: job.messageId,
        kind: job.kind,
        status: "dead",
        at: completion.at,
        error: completion.lastError ?? undefined
      })
    }

    const deadLetter = (entry: Held, reason: string) =>
      dead(entry, { _tag: "Dead", jobId: entry.job.id, at: clock.unsafeCurrentTimeMillis(), lastError: reason })

    const deferred = (entry: Held, outcome: Deferred): void => {
      attemptFailed(entry.job.sourceId)
      const last = outcome.endpoints.find((state) => state.lastOutcome !== undefined)?.lastOutcome
      finish(entry, {
        _tag: "Retry",
        jobId: entry.job.id,
        nextDueAt: outcome.nextAttemptAt,
        firstAttemptAt: outcome.firstAttemptAt,
        endpointState: persistStates(outcome.endpoints),
        lastError: last === undefined || last._tag === "Success" ? null : last.reason
      })
    }

    const failed = (entry: Held, error: AllEndpointsFailed): void =>
      dead(entry, {
        _tag: "Dead",
        jobId: entry.job.id,
        at: clock.unsafeCurrentTimeMillis(),
        lastError: error.message,
        firstAttemptAt: error.firstAttemptAt,
        endpointState: persistStates(error.endpoints)
      })

    // --- endpoint actors: single-URL jobs ------------------------------------------------------------------------

    const actorFor = (url: string): Actor => {
      let actor = actors.get(url)
      if (actor === undefined) {
        actor = { url, mailbox: [], head: 0, busy: 0, pumping: false, pumpDue: false }
        actors.set(url, actor)
      }
      return actor
    }

    const take = (actor: Actor): Run | undefined => {
      if (actor.head >= actor.mailbox.length) return undefined
      const run = actor.mailbox[actor.head]!
      actor.mailbox[actor.head++] = undefined as never
      if (actor.head === actor.mailbox.length) {
        actor.mailbox.length = 0
        actor.head = 0
      } else if (actor.head > 1024 && actor.head * 2 > actor.mailbox.length) {
        actor.mailbox.splice(0, actor.head)
        actor.head = 0
      }
      return run
    }

    /** Starts the mailbox's next jobs while the endpoint has room: fiberless when it can, in a fiber otherwise. */
    const pump = (actor: Actor): void => {
      if (actor.pumping) return
      actor.pumping = true
      try {
        while (!stopping && actor.busy < concurrencyPerEndpoint) {
          const run = take(actor)
          if (run === undefined) return
          if (run.held.lost) {
            release(run.held)
            continue
          }
          actor.busy += 1
          if (!startAttempt(actor, run)) runFork(turn(actor, run))
        }
      } finally {
        actor.pumping = false
      }
    }

    const pumpSoon = (actor: Actor): void => {
      if (actor.pumpDue) return
      actor.pumpDue = true
      queueMicrotask(() => {
        actor.pumpDue = false
        pump(actor)
      })
    }

    const post = (run: Run): void => {
      const actor = actorFor(run.settings.endpoints[0]!.url)
      actor.mailbox.push(run)
      pump(actor)
    }

    // Attempts within one `deliver` call never sleep in a fiber: a retry comes back as `Deferred`, and waits below.
    const singleOptions = { recordAttempt, maxInlineDelay: Duration.zero, gate: endpointGate }

    /** How a single-URL job's run ended: delivered, dead, waiting in memory, or back to the store. */
    const concluded = (run: Run, firstAttemptAt: number) => ({
      onFailure: (error: AllEndpointsFailed) => Effect.sync(() => failed(run.held, error)),
      onSuccess: (outcome: DeliveryResult): Effect.Effect<void> => {
        const entry = run.held
        const now = clock.unsafeCurrentTimeMillis()
        if (outcome._tag === "Delivered") {
          delivered(entry, now, firstAttemptAt, outcome.url)
          return Effect.void
        }
        if (outcome.nextAttemptAt - now > maxInlineMillis || stopping) {
          deferred(entry, outcome)
          return Effect.void
        }
        return waitForRetry({ ...run, firstAttemptAt: outcome.firstAttemptAt, states: outcome.endpoints }, outcome)
      }
    })

    const deliveryJob = (run: Run, firstAttemptAt: number): DeliveryJob => ({
      jobId: run.held.job.id,
      messageId: run.held.job.messageId,
      body: run.held.job.body,
      settings: run.settings,
      firstAttemptAt,
      endpointStates: run.states
    })

    /** One turn of a single-URL job: its due attempt (at most one), then delivered, dead, waiting, or back to the store. */
    const step = (run: Run): Effect.Effect<void, never, Transport> => {
      const firstAttemptAt = run.firstAttemptAt ?? run.held.job.firstAttemptAt ?? clock.unsafeCurrentTimeMillis()
      return Effect.matchEffect(
        deliver(deliveryJob(run, firstAttemptAt), singleOptions),
        concluded(run, firstAttemptAt)
      )
    }

    /**
     * Runs `effect` as the job's fiber: the lease renewer interrupts it if the job is taken over. A job whose fiber is
     * interrupted (or dies) is released. `slot`: the job holds one of its endpoint's places until the fiber ends.
     */
    const asJobFiber = (
      entry: Held,
      slot: Actor | undefined,
      effect: Effect.Effect<void, never, Transport>
    ): Effect.Effect<void, never, Transport> =>
      Effect.withFiberRuntime<void, never, Transport>((fiber) => {
        entry.fiber = fiber
        return Effect.onExit(effect, (exit) =>
          Effect.suspend(() => {
            // A retry wait started by the effect has taken the job over.
            if (entry.fiber === fiber) entry.fiber = undefined
            if (Exit.isFailure(exit)) release(entry)
            if (slot !== undefined) {
              slot.busy -= 1
              pump(slot)
            }
            return Exit.isFailure(exit) && !Exit.isInterrupted(exit)
              ? Effect.logError("delivery job failed unexpectedly", exit.cause)
              : Effect.void
          }))
      })

    /** The general path of a single-URL job, in a fiber: see `step`. */
    const turn = (actor: Actor, run: Run) => asJobFiber(run.held, actor, step(run))

    // Transports without a callback API (tests' scripted ones) run `post` on a fiber of their own, with the layer's
    // services (its Clock). Interruptible again: this runtime was captured in the uninterruptible layer acquisition.
    const runtime = yield* Effect.runtime<Transport>()
    const transport = yield* Transport
    const runCallback = Runtime.runCallback(runtime)
    const startRequest = transport.start ??
      ((request: TransportRequest, onExit: (exit: TransportExit) => void) => {
        const cancel = runCallback(Effect.interruptible(transport.post(request)), {
          onExit: (exit) => {
            if (!Exit.isInterrupted(exit)) onExit(exit)
          }
        })
        return () => cancel()
      })

    /**
     * The fiberless path: the first attempt of a fresh single-URL job (no earlier state, within its window) while a
     * permit of the endpoint is free. `false` when the job does not qualify: it takes the general path.
     */
    const startAttempt = (actor: Actor, run: Run): boolean => {
      if (run.states.length > 0) return false
      const entry = run.held
      const job = entry.job
      const startedAt = clock.unsafeCurrentTimeMillis()
      const firstAttemptAt = run.firstAttemptAt ?? job.firstAttemptAt ?? startedAt
      if (startedAt > deadline(firstAttemptAt)) return false
      const permits = gate(actor.url)
      if (!permits.tryTake()) return false
      const endpoint = prepareEndpoint(
        run.settings.endpoints[0]!,
        job.body,
        signatureFor(signingSecret(run.settings), job.body)
      )
      const input: AttemptInput = {
        jobId: job.id,
        messageId: job.messageId,
        endpoint,
        attemptNumber: 1,
        record: recordAttempt
      }
      let ended = false
      const end = (): boolean => {
        if (ended) return false
        ended = true
        entry.abort = undefined
        permits.giveBack()
        actor.busy -= 1
        return true
      }
      const cancel = startRequest(endpoint.request, (exit) => {
        if (!end()) return
        const finishedAt = clock.unsafeCurrentTimeMillis()
        const result = settled(input, startedAt, finishedAt, exit)
        if (result === undefined) {
          // A defect of the transport: the job waits for its lease, as a failed fiber leaves it.
          release(entry)
          runFork(Effect.logError("delivery job failed unexpectedly", (exit as Exit.Failure<unknown, unknown>).cause))
        } else {
          keepAttempt(result.record)
          if (result.outcome._tag === "Success") {
            if (finishedAt - startedAt > quickDeliveryMillis) mailboxes.notQuick(job.sourceId)
            else if (mailboxes.deliveredQuickly(job.sourceId)) signal.unsafeNotify()
            delivered(entry, finishedAt, firstAttemptAt, endpoint.url)
          } else if (entry.lost) {
            release(entry)
          } else {
            attemptFailed(job.sourceId)
            runFork(asJobFiber(entry, undefined, afterFirstAttempt(run, endpoint, firstAttemptAt, input, result)))
          }
        }
        // Not from inside the transport's callback: undici hands the connection back to its pool after it, and a request
        // dispatched before that would open another connection.
        pumpSoon(actor)
      })
      if (!ended) {
        // Bound to a name first: V8 allocates a function literal assigned straight to a property in the old generation
        // (its guess for methods), where it would keep this job's whole closure context past every scavenge.
        const abort = () => {
          if (!end()) return
          cancel()
          keepAttempt(abortedRecord(input, startedAt, clock.unsafeCurrentTimeMillis()))
          release(entry)
          pump(actor)
        }
        entry.abort = abort
      }
      return true
    }

    /** A fiberless first attempt failed: the job goes on from its outcome exactly as `deliver` would. */
    const afterFirstAttempt = (
      run: Run,
      endpoint: PreparedEndpoint,
      firstAttemptAt: number,
      input: AttemptInput,
      result: Settled
    ): Effect.Effect<void, never, Transport> => {
      const goOn = Effect.matchEffect(
        continueAfterAttempt(deliveryJob(run, firstAttemptAt), endpoint, result.outcome, singleOptions),
        concluded(run, firstAttemptAt)
      )
      return result.timeout === undefined ? goOn : Effect.zipRight(logTimeout(input, result.timeout), goOn)
    }

    // A retry due soon waits in memory on a timer fiber (no slot), then goes back to its endpoint's mailbox.
    const waitForRetry = (run: Run, outcome: Deferred) =>
      Effect.sync(() => {
        const entry = run.held
        entry.fiber = runFork(
          Effect.sleep(Duration.millis(Math.max(0, outcome.nextAttemptAt - clock.unsafeCurrentTimeMillis()))).pipe(
            Effect.zipRight(Effect.sync(() => {
              entry.fiber = undefined
              if (entry.lost) release(entry)
              else post(run)
            })),
            Effect.onInterrupt(() => Effect.sync(() => release(entry)))
          )
        )
      })

    // --- jobs with several URLs: a fiber each, racing its URLs ---------------------------------------------------

    const runRace = (entry: Held, settings: WebhookSettings) =>
      Effect.gen(function*() {
        const job = entry.job
        const firstAttemptAt = job.firstAttemptAt ?? clock.unsafeCurrentTimeMillis()
        const result = yield* deliver(
          {
            jobId: job.id,
            messageId: job.messageId,
            body: job.body,
            settings,
            firstAttemptAt,
            endpointStates: restoreStates(job.endpointState)
          },
          { recordAttempt, maxInlineDelay, gate: endpointGate }
        ).pipe(Effect.either)
        if (result._tag === "Left") return failed(entry, result.left)
        const outcome = result.right
        if (outcome._tag === "Deferred") return deferred(entry, outcome)
        delivered(entry, clock.unsafeCurrentTimeMillis(), firstAttemptAt, outcome.url)
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logError("delivery job failed unexpectedly", cause)),
        Effect.annotateLogs({ jobId: entry.job.id, messageId: entry.job.messageId }),
        Effect.ensuring(Effect.sync(() => release(entry)))
      )

    // --- batched writes --------------------------------------------------------------------------------------------

    const report = (done: ReadonlyArray<DeliveryOutcome>, latency: ReadonlyArray<number>) =>
      Effect.suspend(() => {
        let deliveredCount = 0
        for (const outcome of done) if (outcome.status === "delivered") deliveredCount++
        if (deliveredCount > 0) jobsDelivered.unsafeUpdate(deliveredCount, [])
        if (done.length > deliveredCount) jobsDead.unsafeUpdate(done.length - deliveredCount, [])
        for (const seconds of latency) deliveryLatency.unsafeUpdate(seconds, [])
        return outcomes.publishAll(done)
      })

    const countAttempts = (records: ReadonlyArray<StoredAttemptRecord>) => {
      const byOutcome = { success: 0, retryable: 0, permanent: 0, aborted: 0 }
      for (const record of records) byOutcome[record.outcome] += 1
      for (const [outcome, count] of Object.entries(byOutcome) as Array<[keyof typeof byOutcome, number]>) {
        if (count > 0) attemptsWithOutcome(outcome).unsafeUpdate(count, [])
      }
    }

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
      countAttempts(records)
      const write = batch.length === 0 && records.length === 0 ?
        Effect.void :
        store.completeMany(owner, batch, records).pipe(
          Effect.tap((result) =>
            result.refused.length === 0 ? Effect.void : Effect.logWarning(
              `${result.refused.length} finished jobs had been taken over by another dispatcher; their outcome was not written`
            )
          ),
          Effect.tap(() => (writeFailures = 0)),
          Effect.catchAll((error) => {
            // Kept for the next flush, which the flusher tries again with backoff: written once the store answers
            // within the jobs' leases, they are not delivered a second time (past their leases, they are).
            completions = batch.concat(completions)
            attempts = records.concat(attempts)
            writeFailures += 1
            workWaiting.unsafeOpen()
            return writeFailures === 1
              ? Effect.logError("could not write finished jobs; trying again until the store answers", error)
              : Effect.void
          })
        )
      return Effect.zipRight(write, report(done, latency))
    }))

    const flusher = Effect.gen(function*() {
      while (true) {
        yield* workWaiting.await
        yield* workWaiting.close
        // A batch that filled up during the last write goes at once.
        if (completions.length < flushSize) yield* Effect.timeoutOption(batchFull.await, flushDelay)
        yield* batchFull.close
        yield* flush
        if (writeFailures > 0) {
          yield* Effect.sleep(Duration.millis(Math.min(2_000, flushDelayMillis * 2 ** Math.min(writeFailures, 10))))
        }
      }
    })

    // --- claims ----------------------------------------------------------------------------------------------------

    /** The webhook settings of each source of a claim, read once per source (through the short-lived cache). */
    const settingsOf = (claimed: ReadonlyArray<ClaimedJob>) =>
      Effect.gen(function*() {
        const bySource = new Map<string, WebhookSettings | string>()
        for (const job of claimed) {
          if (bySource.has(job.sourceId)) continue
          const source = yield* sources.byId(job.sourceId).pipe(
            Effect.catchAll((error) =>
              Effect.as(Effect.logError("could not read a source; its jobs wait for their lease", error), undefined)
            )
          )
          if (source === undefined) continue
          const settings = Option.isNone(source) ? "the source was deleted" : source.value.webhooks === undefined
            ? "the source has no webhook destination"
            : !source.value.webhooks.enabled
            ? "the webhook destination is disabled"
            : source.value.webhooks
          bySource.set(job.sourceId, settings)
        }
        return bySource
      })

    const admit = (job: ClaimedJob, settings: WebhookSettings | string | undefined): void => {
      const entry: Held = { job, fiber: undefined, abort: undefined, lost: false }
      held.set(job.id, entry)
      // A source that could not be read: the job stays leased and is claimed again when the lease lapses.
      if (settings === undefined) return release(entry)
      if (typeof settings === "string") return deadLetter(entry, settings)
      if (settings.endpoints.length === 1) {
        return post({ held: entry, settings, firstAttemptAt: undefined, states: restoreStates(job.endpointState) })
      }
      entry.fiber = runFork(runRace(entry, settings))
      // A job that finished at once has already been released.
      if (!held.has(job.id)) entry.fiber = undefined
    }

    // Expired leases (a stopped process's jobs) are looked for at most this often, not on every claim: the query
    // costs as much as a small claim and almost always finds nothing.
    const expiredEvery = Math.max(1, Math.min(1000, Math.floor(leaseMillis / 4)))
    let expiredCheckedAt = -Infinity
    // The last claim that left saturated sources out and found nothing: the same claim is not sent again until
    // `idlePoll` later or until the saturated sources change, so that a full mailbox does not turn every doorbell ring
    // (every ingest commit of its source) into a claim (one index probe per source with pending jobs, migration 7). A
    // claim without exclusions in between does not forget it (it would have found the other sources' due jobs too).
    let emptyExclusion: { readonly key: string; readonly until: number } | undefined
    /** Claims failed in a row: logged once, and the polls back off while the store cannot answer. */
    let claimFailures = 0

    const claimBackoffMaxMillis = Math.max(idlePollMillis, 2_000)

    const claimer = Effect.gen(function*() {
      while (true) {
        // The doorbell is reset before looking, so a ring that comes while we claim is not lost.
        yield* signal.reset
        yield* yieldToIngest
        const room = maxJobsInMemory - held.size
        if (room < claimThreshold) {
          yield* signal.wait(idlePoll)
          continue
        }
        // Sources past half their mailbox wait for the doorbell (rung when they drop back to half); the others
        // can take at most the least room one of them has, so a claim is rarely sent back as overflow.
        const { room: mailboxRoom, saturated } = mailboxes.claimShape()
        const limit = Math.min(room, claimBatch, mailboxRoom)
        const now = clock.unsafeCurrentTimeMillis()
        const exclusionKey = saturated.length === 0 ? undefined : saturated.sort().join("\n")
        if (exclusionKey !== undefined && emptyExclusion?.key === exclusionKey && now < emptyExclusion.until) {
          yield* signal.wait(Duration.millis(emptyExclusion.until - now))
          continue
        }
        const expired = now - expiredCheckedAt >= expiredEvery
        if (expired) expiredCheckedAt = now
        const claimed = yield* store.claimDue(owner, now, limit, leaseMillis, { excludeSourceIds: saturated, expired })
          .pipe(
            Effect.tap(() => (claimFailures = 0)),
            Effect.catchAll((error) => {
              claimFailures += 1
              return Effect.as(
                claimFailures === 1
                  ? Effect.logError(
                    "could not claim due jobs; trying again with backoff until the store answers",
                    error
                  )
                  : Effect.void,
                undefined
              )
            })
          )
        if (claimed === undefined) {
          // A store that cannot answer: wait longer each time (no job is touched, so no attempt or window is spent).
          yield* signal.wait(
            Duration.millis(Math.min(claimBackoffMaxMillis, idlePollMillis * 2 ** (claimFailures - 1)))
          )
          continue
        }
        if (exclusionKey !== undefined) {
          emptyExclusion = claimed.length === 0 ? { key: exclusionKey, until: now + idlePollMillis } : undefined
        }
        const settings = claimed.length === 0 ? undefined : yield* settingsOf(claimed)
        // One claim can bring more of a source than its mailbox holds: the excess goes straight back.
        const overflow: Array<string> = []
        for (const job of claimed) {
          // Our own lease on a job still in memory lapsed (a renewal came late) and this claim handed it back: the
          // claim renewed the lease; a second run would deliver it twice, and releasing it as overflow would let
          // another process deliver it while ours still does.
          if (held.has(job.id)) continue
          if (!mailboxes.tryAdd(job.sourceId)) overflow.push(job.id)
          else admit(job, settings?.get(job.sourceId))
        }
        if (overflow.length > 0) {
          yield* store.releaseLeases(owner, overflow).pipe(
            Effect.catchAll((error) => Effect.logError("could not release overflowing jobs", error))
          )
        }
        if (claimed.length < limit || overflow.length > 0) yield* signal.wait(idlePoll)
      }
    })

    const renewer = Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(leaseMillis / 3))))
        if (held.size === 0) continue
        const now = clock.unsafeCurrentTimeMillis()
        const asked = [...held.keys()]
        const kept = yield* store.renewLeases(owner, asked, now + leaseMillis).pipe(
          Effect.catchAll((error) => Effect.as(Effect.logError("could not renew leases", error), undefined))
        )
        if (kept === undefined) continue
        // A lease that lapsed and was taken over: that dispatcher delivers the job now, so stop ours (its
        // request is aborted) rather than deliver it twice and have our outcome refused.
        const stillHeld = new Set(kept)
        let lost = 0
        for (const id of asked) {
          const entry = held.get(id)
          if (entry === undefined || stillHeld.has(id)) continue
          lost += 1
          entry.lost = true
          // Running: abort its attempt or stop its fiber (its slot is freed); queued: dropped when its turn comes.
          if (entry.abort !== undefined) entry.abort()
          else if (entry.fiber !== undefined) yield* Fiber.interruptFork(entry.fiber)
        }
        if (lost > 0) yield* Effect.logWarning(`${lost} jobs were taken over by another dispatcher`)
      }
    })

    /**
     * Shutdown: no new attempts or retries, and the fiberless attempts in flight are aborted (recorded, their jobs
     * released); the fibers are interrupted by the caller (`FiberSet.clear`).
     */
    const stop = Effect.sync(() => {
      stopping = true
      for (const entry of held.values()) entry.abort?.()
    })

    return { owner, fibers, claimer, renewer, flusher, flush, held, stop }
  })

/**
 * Starts a dispatcher whose fibers live in the current scope, and returns it (its `held` jobs are what it holds in
 * memory now). At start it takes back jobs a previous process on an exclusive store (SQLite) left leased when it died;
 * when the scope closes it stops, writes what it finished and releases every lease it still holds.
 */
export const start = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* Store
    // Registered first, so it runs last: after the job fibers stopped, write what they finished and release the rest.
    const dispatcher = yield* Effect.acquireRelease(make(options), (dispatcher) =>
      Effect.gen(function*() {
        yield* dispatcher.stop
        yield* FiberSet.clear(dispatcher.fibers)
        yield* dispatcher.flush
        const released = yield* store.releaseLeases(dispatcher.owner).pipe(Effect.orElseSucceed(() => 0))
        if (released > 0) yield* Effect.logInfo(`released ${released} leased jobs back to the outbox`)
      }))
    const recovered = yield* store.recoverAbandonedLeases().pipe(Effect.orElseSucceed(() => 0))
    if (recovered > 0) yield* Effect.logInfo(`took back ${recovered} jobs left leased by a stopped process`)
    yield* Effect.forkScoped(dispatcher.flusher)
    yield* Effect.forkScoped(dispatcher.renewer)
    yield* Effect.forkScoped(dispatcher.claimer)
    return dispatcher
  })

/** The dispatcher as a background layer: `start` in the layer's scope. */
export const layer = (options: DispatcherOptions = {}): Layer.Layer<
  never,
  never,
  Store | Transport | OutboxSignal | DeliveryOutcomes
> => Layer.scopedDiscard(start(options))
