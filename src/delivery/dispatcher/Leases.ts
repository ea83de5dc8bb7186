import { Duration, Effect, Fiber } from "effect"
import { KeyedSlots } from "../../runtime/Slots.js"
import type { ClaimedJob } from "../../store/Model.js"
import type { OutboxShape } from "../../store/Outbox.js"
import type { OutboxSignalShape } from "../../store/OutboxSignal.js"
import { SourceMailboxes } from "../SourceMailboxes.js"
import type { Settings } from "./Options.js"

/** A claimed job while this dispatcher holds it. */
export interface Held {
  readonly job: ClaimedJob
  /** The fiber delivering the job; none while it waits in its endpoint's mailbox. */
  fiber: Fiber.Fiber<unknown, unknown> | undefined
  /** Its lease was taken over by another dispatcher: drop it wherever it is. */
  lost: boolean
}

export interface LeasesConfig {
  readonly owner: string
  readonly outbox: OutboxShape
  readonly signal: OutboxSignalShape
  readonly settings: Settings
}

/**
 * The jobs this dispatcher holds under its lease: what is in memory (bounded in all and per source, `SourceMailboxes`),
 * the renewal of the leases, and giving jobs back. Forgetting a job rings the claimer only when another claim is worth
 * a round trip: enough room in all, or a full mailbox half empty again (ringing on every finished job would claim one
 * job per query).
 */
export const makeLeases = (config: LeasesConfig) => {
  const { outbox, owner, settings, signal } = config
  const held = new KeyedSlots<string, Held>()
  const mailboxes = new SourceMailboxes(settings.mailboxPerSource, settings.mailboxPerQuickSource)

  const hold = (job: ClaimedJob): Held => {
    const entry: Held = { job, fiber: undefined, lost: false }
    held.set(job.id, entry)
    return entry
  }

  const release = (entry: Held): void => {
    if (held.get(entry.job.id) !== entry) return
    held.delete(entry.job.id)
    const halfEmpty = mailboxes.remove(entry.job.sourceId)
    if (settings.maxJobsInMemory - held.size === settings.claimThreshold || halfEmpty) signal.unsafeNotify()
  }

  /** Jobs handed back to the outbox before any attempt (their leases released). */
  const giveBack = (ids: ReadonlyArray<string>, what: string) =>
    outbox.releaseLeases(owner, ids).pipe(
      Effect.catch((error) => Effect.logError(`could not hand ${what} back to the outbox`, error))
    )

  /** Renews the leases of the jobs held, and of those `unwritten` names (finished, their outcome not yet written). */
  const renewWith = (unwritten: () => ReadonlyArray<string>) =>
    Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(settings.leaseMillis / 3))))
        const finished = unwritten()
        if (held.size === 0 && finished.length === 0) continue
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const asked = finished.length === 0 ? held.keys() : [...held.keys(), ...finished]
        const kept = yield* outbox.renewLeases(owner, asked, now + settings.leaseMillis).pipe(
          Effect.catch((error) => Effect.as(Effect.logError("could not renew leases", error), undefined))
        )
        if (kept === undefined) continue
        // A lease that lapsed and was taken over: that dispatcher delivers the job now, so stop ours (its request is
        // aborted and recorded) rather than deliver it twice and have our outcome refused.
        const stillHeld = new Set(kept)
        let lost = 0
        for (const id of asked) {
          const entry = held.get(id)
          if (entry === undefined || stillHeld.has(id)) continue
          lost += 1
          entry.lost = true
          // Running: its fiber stops (and the job is forgotten); queued: dropped when its turn comes.
          if (entry.fiber !== undefined) yield* Effect.forkDetach(Fiber.interrupt(entry.fiber))
        }
        if (lost > 0) yield* Effect.logWarning(`${lost} jobs were taken over by another dispatcher`)
      }
    })

  return { held, mailboxes, hold, release, giveBack, renewWith }
}

export type Leases = ReturnType<typeof makeLeases>
