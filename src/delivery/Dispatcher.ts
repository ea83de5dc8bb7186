import { Clock, Duration, Effect, Fiber, FiberSet, Layer, Metric, Option } from "effect"
import { randomUUID } from "node:crypto"
import { attemptsWithOutcome, deliveryLatency, jobsDead, jobsDelivered } from "../metrics/Metrics.js"
import type { AttemptRecord as StoredAttemptRecord, ClaimedJob, Completion } from "../store/Model.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Store } from "../store/Store.js"
import type { AttemptRecord } from "./AttemptRecord.js"
import { deliver } from "./Deliver.js"
import { EndpointGate } from "./EndpointGate.js"
import { persistStates, restoreStates } from "./EndpointState.js"
import { DeliveryOutcomes } from "./Outcomes.js"
import { Transport } from "./Transport.js"

export interface DispatcherOptions {
  /** Lease owner id, unique per process start. Default: a random UUID. */
  readonly owner?: string | undefined
  /** Requests in flight to one webhook URL at once (SPEC: default 16). */
  readonly concurrencyPerEndpoint?: number | undefined
  /** Jobs of one source held in memory at once: the bound of that source's mailbox. Default 256. */
  readonly mailboxPerSource?: number | undefined
  /** Jobs held in memory in all: the dispatcher's memory bound whatever the backlog on disk. Default 2 048. */
  readonly maxJobsInMemory?: number | undefined
  /** Jobs claimed per store round trip. Default 256. */
  readonly claimBatch?: number | undefined
  /** How long a claim is held before another process may take the job over. Default 60 s; renewed at a third. */
  readonly lease?: Duration.DurationInput | undefined
  /** How long the dispatcher sleeps when the outbox has nothing due (ingest in this process wakes it at once). */
  readonly idlePoll?: Duration.DurationInput | undefined
  /** A retry due later than this goes back to the store instead of waiting in memory. Default 5 s. */
  readonly maxInlineDelay?: Duration.DurationInput | undefined
  /** How long finished jobs wait to be written together (one transaction for all). Default 20 ms. */
  readonly flushDelay?: Duration.DurationInput | undefined
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

/**
 * The dispatcher: claims due jobs from the store under a lease and delivers each with `deliver`.
 *
 * It is an actor system keyed by endpoint. Each webhook URL has a gate of `concurrencyPerEndpoint`
 * permits that its attempts pass through, and each source a mailbox bound: a source whose
 * mailbox is full is left out of the next claims, so a slow or failing endpoint never holds the
 * memory or the slots the others need. Retries due within `maxInlineDelay` wait in memory; later
 * ones go back to the store with the job's per-URL progress, so the 4 h window and the backoff
 * survive restarts. Finished jobs and their attempts are written in batches.
 *
 * On shutdown the job fibers are interrupted (their requests aborted, their attempts recorded),
 * the last batch is written and every lease still held is released.
 */
export const make = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* Store
    const transport = yield* Transport
    const signal = yield* OutboxSignal
    const outcomes = yield* DeliveryOutcomes
    const sources = makeSourceCache(store)

    const owner = options.owner ?? randomUUID()
    const concurrencyPerEndpoint = options.concurrencyPerEndpoint ?? 16
    const mailboxPerSource = options.mailboxPerSource ?? 256
    const maxJobsInMemory = options.maxJobsInMemory ?? 2048
    const claimBatch = Math.min(options.claimBatch ?? 256, maxJobsInMemory)
    const leaseMillis = Duration.toMillis(Duration.decode(options.lease ?? Duration.seconds(60)))
    const idlePoll = options.idlePoll ?? Duration.millis(200)
    const maxInlineDelay = options.maxInlineDelay ?? Duration.seconds(5)
    const flushDelay = options.flushDelay ?? Duration.millis(20)

    const held = new Map<string, ClaimedJob>()
    // The fiber of each job held, so that a job whose lease another dispatcher took over can be stopped.
    const running = new Map<string, Fiber.RuntimeFiber<void>>()
    const heldPerSource = new Map<string, number>()
    const gates = new Map<string, EndpointGate>()
    let completions: Array<Completion> = []
    let attempts: Array<StoredAttemptRecord> = []
    const workWaiting = yield* Effect.makeLatch(false)

    const gate = (key: string): EndpointGate => {
      let endpoint = gates.get(key)
      if (endpoint === undefined) {
        endpoint = new EndpointGate(concurrencyPerEndpoint)
        gates.set(key, endpoint)
      }
      return endpoint
    }

    // Every attempt passes its URL's gate: the endpoint actor's concurrency limit.
    const endpointGate = (url: string) => gate(url).withPermit

    const recordAttempt = (record: AttemptRecord) =>
      Effect.suspend(() => {
        attempts.push(toStoredAttempt(record))
        return Effect.zipRight(Metric.increment(attemptsWithOutcome(storedOutcome(record.outcome))), workWaiting.open)
      })

    const finish = (completion: Completion) =>
      Effect.suspend(() => {
        completions.push(completion)
        return workWaiting.open
      })

    const claimThreshold = Math.max(1, Math.floor(claimBatch / 4))
    const mailboxLowWater = Math.floor(mailboxPerSource / 2)

    // Rings the claimer only when another claim is worth a round trip: enough room in all, or a
    // full mailbox half empty again. Ringing on every finished job would claim one job per query.
    const release = (job: ClaimedJob) =>
      Effect.suspend(() => {
        held.delete(job.id)
        running.delete(job.id)
        const count = (heldPerSource.get(job.sourceId) ?? 1) - 1
        if (count <= 0) heldPerSource.delete(job.sourceId)
        else heldPerSource.set(job.sourceId, count)
        const room = maxJobsInMemory - held.size
        return room === claimThreshold || count === mailboxLowWater ? signal.notify : Effect.void
      })

    const deadLetter = (job: ClaimedJob, now: number, reason: string) =>
      Effect.zipRight(
        finish({ _tag: "Dead", jobId: job.id, at: now, lastError: reason }),
        publishDead(job, now, reason)
      )

    const publishDead = (job: ClaimedJob, now: number, reason: string) =>
      Effect.zipRight(
        Metric.increment(jobsDead),
        outcomes.publish({
          jobId: job.id,
          sourceId: job.sourceId,
          messageId: job.messageId,
          kind: job.kind,
          status: "dead",
          at: now,
          error: reason
        })
      )

    const runJob = (job: ClaimedJob) =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const source = yield* sources.byId(job.sourceId)
        if (Option.isNone(source)) return yield* deadLetter(job, startedAt, "the source was deleted")
        const settings = source.value.webhooks
        if (settings === undefined) return yield* deadLetter(job, startedAt, "the source has no webhook destination")
        if (!settings.enabled) return yield* deadLetter(job, startedAt, "the webhook destination is disabled")

        const firstAttemptAt = job.firstAttemptAt ?? startedAt
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
        ).pipe(Effect.either, Effect.provideService(Transport, transport))
        const now = yield* Clock.currentTimeMillis

        if (result._tag === "Left") {
          const reason = result.left.message
          yield* finish({
            _tag: "Dead",
            jobId: job.id,
            at: now,
            lastError: reason,
            firstAttemptAt,
            endpointState: persistStates(result.left.endpoints)
          })
          return yield* publishDead(job, now, reason)
        }
        const outcome = result.right
        if (outcome._tag === "Deferred") {
          const last = outcome.endpoints.find((state) => state.lastOutcome !== undefined)?.lastOutcome
          return yield* finish({
            _tag: "Retry",
            jobId: job.id,
            nextDueAt: outcome.nextAttemptAt,
            firstAttemptAt: outcome.firstAttemptAt,
            endpointState: persistStates(outcome.endpoints),
            lastError: last === undefined || last._tag === "Success" ? null : last.reason
          })
        }
        yield* finish({ _tag: "Delivered", jobId: job.id, at: now, firstAttemptAt })
        yield* Metric.increment(jobsDelivered)
        yield* Metric.update(deliveryLatency, Math.max(0, now - job.createdAt) / 1000)
        yield* outcomes.publish({
          jobId: job.id,
          sourceId: job.sourceId,
          messageId: job.messageId,
          kind: job.kind,
          status: "delivered",
          at: now,
          url: outcome.url
        })
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logError("delivery job failed unexpectedly", cause)),
        Effect.annotateLogs({ jobId: job.id, messageId: job.messageId }),
        Effect.ensuring(release(job))
      )

    // Uninterruptible: the batch leaves the buffers before the write, so it must not be cut half-way.
    const flush = Effect.uninterruptible(Effect.suspend(() => {
      if (completions.length === 0 && attempts.length === 0) return Effect.void
      const batch = completions
      const records = attempts
      completions = []
      attempts = []
      return store.completeMany(owner, batch, records).pipe(
        Effect.tap((result) =>
          result.refused.length === 0 ? Effect.void : Effect.logWarning(
            `${result.refused.length} finished jobs had been taken over by another dispatcher; their outcome was not written`
          )
        ),
        Effect.catchAll((error) =>
          Effect.logError("could not write finished jobs; they will be delivered again after their lease", error)
        )
      )
    }))

    const flusher = Effect.gen(function*() {
      while (true) {
        yield* workWaiting.await
        yield* workWaiting.close
        yield* Effect.sleep(flushDelay)
        yield* flush
      }
    })

    const fibers = yield* FiberSet.make<void, never>()

    const admit = (job: ClaimedJob) => {
      held.set(job.id, job)
      heldPerSource.set(job.sourceId, (heldPerSource.get(job.sourceId) ?? 0) + 1)
      return Effect.map(FiberSet.run(fibers, runJob(job)), (fiber) => {
        // A job that finished at once has already been released.
        if (held.has(job.id)) running.set(job.id, fiber)
      })
    }

    const claimer = Effect.gen(function*() {
      while (true) {
        // The doorbell is reset before looking, so a ring that comes while we claim is not lost.
        yield* signal.reset
        const room = maxJobsInMemory - held.size
        if (room < claimThreshold) {
          yield* signal.wait(idlePoll)
          continue
        }
        // Sources past half their mailbox wait for the doorbell (rung when they drop back to half); the others
        // can take at most what the fullest of them has room for, so a claim is rarely sent back as overflow.
        const saturated: Array<string> = []
        let fullest = 0
        for (const [sourceId, count] of heldPerSource) {
          if (count > mailboxLowWater) saturated.push(sourceId)
          else if (count > fullest) fullest = count
        }
        const limit = Math.min(room, claimBatch, mailboxPerSource - fullest)
        const now = yield* Clock.currentTimeMillis
        const claimed = yield* store.claimDue(owner, now, limit, leaseMillis, { excludeSourceIds: saturated }).pipe(
          Effect.catchAll((error) =>
            Effect.as(Effect.logError("could not claim due jobs", error), [] as ReadonlyArray<ClaimedJob>)
          )
        )
        // One claim can bring more of a source than its mailbox holds: the excess goes straight back.
        const overflow: Array<string> = []
        for (const job of claimed) {
          // Our own lease on a job still in memory lapsed (a renewal came late) and this claim handed it back: the
          // claim renewed the lease; a second fiber would deliver it twice, and releasing it as overflow would let
          // another process deliver it while ours still does.
          if (held.has(job.id)) continue
          if ((heldPerSource.get(job.sourceId) ?? 0) >= mailboxPerSource) overflow.push(job.id)
          else yield* admit(job)
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
        const now = yield* Clock.currentTimeMillis
        const asked = [...held.keys()]
        const kept = yield* store.renewLeases(owner, asked, now + leaseMillis).pipe(
          Effect.catchAll((error) => Effect.as(Effect.logError("could not renew leases", error), undefined))
        )
        if (kept === undefined) continue
        // A lease that lapsed and was taken over: that dispatcher delivers the job now, so stop ours (its
        // request is aborted) rather than deliver it twice and have our outcome refused.
        const stillHeld = new Set(kept)
        const lost = asked.filter((id) => !stillHeld.has(id) && held.has(id))
        for (const id of lost) {
          const fiber = running.get(id)
          if (fiber !== undefined) yield* Fiber.interruptFork(fiber)
        }
        if (lost.length > 0) yield* Effect.logWarning(`${lost.length} jobs were taken over by another dispatcher`)
      }
    })

    return { owner, fibers, claimer, renewer, flusher, flush, held }
  })

/**
 * The dispatcher as a background layer: its fibers live in the layer's scope. At start it takes
 * back jobs a previous process on an exclusive store (SQLite) left leased when it died.
 */
export const layer = (options: DispatcherOptions = {}): Layer.Layer<
  never,
  never,
  Store | Transport | OutboxSignal | DeliveryOutcomes
> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const store = yield* Store
    // Registered first, so it runs last: after the job fibers stopped, write what they finished and release the rest.
    const dispatcher = yield* Effect.acquireRelease(make(options), (dispatcher) =>
      Effect.gen(function*() {
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
  }))
