import { Clock, Duration, Effect, Option } from "effect"
import { destinationDeletedReason } from "../../domain/DestinationErrors.js"
import { endpointsOf } from "../../domain/Destinations.js"
import type { Destination } from "../../domain/Settings.js"
import { webhooksDestinationId } from "../../domain/WebhooksDestination.js"
import type { ClaimedJob, StoredSource } from "../../store/Model.js"
import type { OutboxShape } from "../../store/Outbox.js"
import type { OutboxSignalShape } from "../../store/OutboxSignal.js"
import { SettingsVersion } from "../../store/SettingsVersion.js"
import { makeSourceCache } from "../../store/SourceCache.js"
import type { SourcesShape } from "../../store/Sources.js"
import type { EndpointGuardsShape } from "../EndpointGuards.js"
import type { JobRuns } from "./JobRuns.js"
import type { Leases } from "./Leases.js"
import type { Settings } from "./Options.js"

export interface ClaimerConfig {
  readonly owner: string
  readonly outbox: OutboxShape
  /**
   * Where the claimed jobs' sources and destinations are read, through a cache that the settings version in context
   * (`SettingsVersion`, when the engine has one) drops at every admin write.
   */
  readonly sources: SourcesShape
  readonly signal: OutboxSignalShape
  readonly settings: Settings
  readonly leases: Leases
  readonly runs: JobRuns
  /** Told each source's endpoints once per claim: their circuit and rate-limit settings. */
  readonly guards: EndpointGuardsShape
  /** Held back while ingest saturates the process (`YieldToIngest`), or nothing. */
  readonly yieldToIngest: Effect.Effect<void>
}

/**
 * The claim loop: takes due jobs from the store under this dispatcher's lease, as many as memory and the sources'
 * mailboxes have room for, reads their sources once per claim, and hands each job to its destination's endpoint
 * actor. It sleeps on the outbox doorbell (ingest in this process rings it) or `idlePoll` when nothing is due.
 */
export const makeClaimer = (config: ClaimerConfig) => {
  const { leases, outbox, owner, runs, settings, signal } = config
  const { held, mailboxes } = leases
  const idlePollMillis = Duration.toMillis(settings.idlePoll)

  /**
   * The source of each job of a claim, read once per source (through the short-lived cache): the source, why its jobs
   * cannot be delivered (deleted), or undefined when it could not be read. Its endpoints are told to the guards.
   */
  const sourcesOf = (sources: ReturnType<typeof makeSourceCache>, claimed: ReadonlyArray<ClaimedJob>) =>
    Effect.gen(function*() {
      const bySource = new Map<string, StoredSource | string>()
      for (const job of claimed) {
        if (bySource.has(job.sourceId)) continue
        const source = yield* sources.byId(job.sourceId).pipe(
          Effect.catch((error) =>
            Effect.as(Effect.logError("could not read a source; its jobs wait for their lease", error), undefined)
          )
        )
        if (source === undefined) continue
        if (Option.isNone(source)) {
          bySource.set(job.sourceId, "the source was deleted")
          continue
        }
        const endpoints = endpointsOf(source.value.destinations)
        if (endpoints.length > 0) config.guards.configure(job.sourceId, endpoints)
        bySource.set(job.sourceId, source.value)
      }
      return bySource
    })

  /** The job's destination, or why it cannot be delivered (REFERENCE §1a). */
  const destinationOf = (job: ClaimedJob, source: StoredSource): Destination | string => {
    const destination = source.destinations.find((candidate) => candidate.id === job.destinationId)
    if (destination === undefined) {
      return job.destinationId === webhooksDestinationId
        ? "the source has no webhook destination"
        : destinationDeletedReason
    }
    return destination.enabled ? destination : "the webhook destination is disabled"
  }

  const admit = (job: ClaimedJob, source: StoredSource | string | undefined): void => {
    const entry = leases.hold(job)
    // A source that could not be read: the job stays leased and is claimed again when the lease lapses.
    if (source === undefined) return leases.release(entry)
    const destination = typeof source === "string" ? source : destinationOf(job, source)
    if (typeof destination === "string") return runs.deadLetter(entry, destination)
    runs.admit(entry, destination)
  }

  // Expired leases (a stopped process's jobs) are looked for at most this often, not on every claim: the query
  // costs as much as a small claim and almost always finds nothing.
  const expiredEvery = Math.max(1, Math.min(1000, Math.floor(settings.leaseMillis / 4)))
  let expiredCheckedAt = -Infinity
  // The last claim that left saturated sources out and found nothing: the same claim is not sent again until
  // `idlePoll` later or until the saturated sources change, so that a full mailbox does not turn every doorbell ring
  // (every ingest commit of its source) into a claim (one index probe per source with pending jobs, migration 7). A
  // claim without exclusions in between does not forget it (it would have found the other sources' due jobs too).
  let emptyExclusion: { readonly key: string; readonly until: number } | undefined
  /** Claims failed in a row: logged once, and the polls back off while the store cannot answer. */
  let claimFailures = 0
  const claimBackoffMaxMillis = Math.max(idlePollMillis, 2_000)

  return Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const versions = yield* Effect.serviceOption(SettingsVersion)
    const sources = makeSourceCache(config.sources, Option.getOrUndefined(versions))
    while (true) {
      // The doorbell is reset before looking, so a ring that comes while we claim is not lost.
      yield* signal.reset
      yield* config.yieldToIngest
      const room = settings.maxJobsInMemory - held.size
      if (room < settings.claimThreshold) {
        yield* signal.wait(settings.idlePoll)
        continue
      }
      // Sources past half their mailbox wait for the doorbell (rung when they drop back to half); the others
      // can take at most the least room one of them has, so a claim is rarely sent back as overflow.
      const { room: mailboxRoom, saturated } = mailboxes.claimShape()
      const limit = Math.min(room, settings.claimBatch, mailboxRoom)
      const now = clock.currentTimeMillisUnsafe()
      const exclusionKey = saturated.length === 0 ? undefined : saturated.sort().join("\n")
      if (exclusionKey !== undefined && emptyExclusion?.key === exclusionKey && now < emptyExclusion.until) {
        yield* signal.wait(Duration.millis(emptyExclusion.until - now))
        continue
      }
      const expired = now - expiredCheckedAt >= expiredEvery
      if (expired) expiredCheckedAt = now
      const claimed = yield* outbox.claimDue(owner, now, limit, settings.leaseMillis, {
        excludeSourceIds: saturated,
        expired
      }).pipe(
        Effect.tap(() => Effect.sync(() => (claimFailures = 0))),
        Effect.catch((error) => {
          claimFailures += 1
          const logged = claimFailures === 1
            ? Effect.logError("could not claim due jobs; trying again with backoff until the store answers", error)
            : Effect.void
          return Effect.as(logged, undefined)
        })
      )
      if (claimed === undefined) {
        // A store that cannot answer: wait longer each time (no job is touched, so no attempt or window is spent).
        yield* signal.wait(Duration.millis(Math.min(claimBackoffMaxMillis, idlePollMillis * 2 ** (claimFailures - 1))))
        continue
      }
      if (exclusionKey !== undefined) {
        emptyExclusion = claimed.length === 0 ? { key: exclusionKey, until: now + idlePollMillis } : undefined
      }
      const claimedSources = claimed.length === 0 ? undefined : yield* sourcesOf(sources, claimed)
      // One claim can bring more of a source than its mailbox holds: the excess goes straight back.
      const overflow: Array<string> = []
      for (const job of claimed) {
        // Our own lease on a job still in memory lapsed (a renewal came late) and this claim handed it back: the
        // claim renewed the lease; a second run would deliver it twice, and releasing it as overflow would let
        // another process deliver it while ours still does.
        if (held.has(job.id)) continue
        if (!mailboxes.tryAdd(job.sourceId)) overflow.push(job.id)
        else admit(job, claimedSources?.get(job.sourceId))
      }
      if (overflow.length > 0) yield* leases.giveBack(overflow, "overflowing jobs")
      if (claimed.length < limit || overflow.length > 0) yield* signal.wait(settings.idlePoll)
    }
  })
}
