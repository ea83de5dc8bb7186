import { Array as Arr, Clock, Effect, Either, Exit, Option, Scheduler } from "effect"
import { UnknownSource } from "../domain/IngestErrors.js"
import { uuidv7 } from "../domain/MessageId.js"
import type { AudienceRef, StoredSource, StoreShape } from "../store/Model.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { StoreError } from "../store/StoreError.js"
import {
  AudiencePropertyTaken,
  AudienceSyncInProgress,
  AudienceSyncInterrupted,
  InvalidAdminRequest
} from "./Errors.js"
import { identifyJobs } from "./Identify.js"
import { maxSyncSize, sortedUnique, validateIdList, validateName } from "./Input.js"

/** What a sync changed (SPEC §6). `property` is the trait the audience is sent as. */
export interface AudienceSyncResult {
  readonly property: string
  readonly added: number
  readonly removed: number
  readonly unchanged: number
}

export interface SyncOptions {
  /** Members written (or removed) per transaction, and read per page. */
  readonly chunkSize?: number | undefined
  /** How long a sync's lease on its audience lasts without a chunk renewing it. */
  readonly leaseMillis?: number | undefined
}

/**
 * 2 000 members per transaction: measured on SQLite (bench/audiences.ts), one chunk of a first
 * sync — 2 000 membership rows and 2 000 identify jobs — commits in about 15–25 ms, which is the
 * longest an ingest request waits behind a sync; larger chunks gained little throughput.
 */
export const defaultChunkSize = 2_000
export const defaultLeaseMillis = 60_000

/**
 * Between chunks, give the event loop a turn: SQLite statements run synchronously, and fibers
 * that only yield to Effect's scheduler resume in microtasks, so without a macrotask here one sync
 * kept every socket, timer and ingest request waiting until it ended (measured: a whole 100 000
 * member sync). A `setTimeout(0)` scheduler for this one yield, not `Effect.sleep`: it is not a
 * delay, and it must not wait for a `TestClock`.
 */
export const yieldToEventLoop: Effect.Effect<void> = Effect.withScheduler(Effect.yieldNow(), Scheduler.timer(0))

export const destinationEnabled = (source: StoredSource): boolean => source.webhooks?.enabled === true

/** The source, fresh from the store (a sync is rare; the ingest cache's 2 s staleness is not wanted here). */
export const sourceOf = (
  store: StoreShape,
  sourceId: string
): Effect.Effect<StoredSource, UnknownSource | StoreError> =>
  Effect.flatMap(
    store.getSource(sourceId),
    Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
  )

/**
 * Audience membership sync (SPEC §6): the caller gives the full current membership; each user
 * whose membership changed gets an identify with `traits: {<property>: true}` (added) or `false`
 * (removed), through the outbox like any tracking call. The first sync is the same diff against
 * an empty membership, so every member gets `true`.
 *
 * How 100 000 members stay cheap and safe:
 * - Memory: only the incoming membership (already in memory: it is the request) is held, as a
 *   set; the stored membership is read a page of `chunkSize` ids at a time (keyset paging on the
 *   primary key), never all at once.
 * - Writes: one transaction per chunk, each a few multi-row statements (ids travel as one JSON /
 *   array parameter): the members added (`INSERT … ON CONFLICT DO NOTHING RETURNING`) or removed
 *   (`DELETE … RETURNING`) and the identify job of exactly those users commit together. So the
 *   stored membership is always exactly what the receiver has been (or is queued to be) told,
 *   whatever happens between chunks.
 * - Staged, not one transaction: on SQLite, the one connection serves ingest and the dispatcher
 *   too, and a transaction holds it from BEGIN to COMMIT; one transaction over a 100 000-member
 *   first sync held it for over a second (measured), stalling every ingest request for that long.
 *   Per-chunk transactions keep each stall to one chunk. The price is that a sync can stop half
 *   way (crash, store error, interruption): the chunks committed stand, with their messages, and
 *   nothing is sent twice or lost; running the same sync again (a PUT of the full membership is
 *   idempotent) applies the rest and converges.
 * - One sync per audience at a time, across processes sharing a PostgreSQL database: a lease on
 *   the audience row, taken at the start, renewed by every chunk's transaction (which also locks
 *   the row on PostgreSQL), released at the end. A second sync meanwhile is refused
 *   (`AudienceSyncInProgress`); a crashed sync's lease lapses after `leaseMillis`.
 * - Destination disabled (or none): memberships are still updated and counted, nothing is sent.
 */
export const makeAudienceSync = (store: StoreShape, signal: OutboxSignalShape, options: SyncOptions = {}) => {
  const chunkSize = Math.max(1, Math.floor(options.chunkSize ?? defaultChunkSize))
  const leaseMillis = options.leaseMillis ?? defaultLeaseMillis

  const syncAudience = (
    sourceId: string,
    audienceName: string,
    userIdsInput: ReadonlyArray<string>
  ): Effect.Effect<
    AudienceSyncResult,
    | InvalidAdminRequest
    | UnknownSource
    | AudienceSyncInProgress
    | AudienceSyncInterrupted
    | AudiencePropertyTaken
    | StoreError
  > =>
    Effect.gen(function*() {
      const name = validateName(audienceName, "audienceName")
      const ids = validateIdList(userIdsInput, "userIds", { max: maxSyncSize, dedupe: false })
      if (Either.isLeft(name) || Either.isLeft(ids)) {
        return yield* new InvalidAdminRequest({
          errors: [...Either.isLeft(name) ? name.left : [], ...Either.isLeft(ids) ? ids.left : []]
        })
      }
      const { property } = name.right
      const source = yield* sourceOf(store, sourceId)
      const enabled = destinationEnabled(source)
      // Sorted: each chunk's rows land in neighbouring primary-key pages (and duplicates collapse).
      const members = sortedUnique(ids.right)
      const incoming = new Set(members)
      const ref: AudienceRef = { sourceId: source.id, audience: name.right.name }

      const startedAt = yield* Clock.currentTimeMillis
      const owner = uuidv7(startedAt)
      const start = yield* store.startAudienceSync(ref, property, owner, startedAt, startedAt + leaseMillis)
      if (start._tag === "Busy") {
        return yield* new AudienceSyncInProgress({ ...ref, leaseExpiresAt: start.leaseExpiresAt })
      }
      if (start._tag === "PropertyTaken") {
        return yield* new AudiencePropertyTaken({ ...ref, property, takenBy: start.audience })
      }

      const apply = (change: "add" | "remove", userIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const result = yield* store.applyAudienceChunk({
            ref,
            owner,
            now,
            leaseUntil: now + leaseMillis,
            change,
            userIds,
            identify: enabled ? identifyJobs(property, now) : undefined
          })
          if (result._tag === "LeaseLost") return yield* new AudienceSyncInterrupted(ref)
          // Committed: wake the dispatcher now, so delivery starts while the sync goes on.
          if (result.jobsCreated > 0) yield* signal.notify
          yield* yieldToEventLoop
          return result.changed
        })

      const run = Effect.gen(function*() {
        let added = 0
        for (const chunk of Arr.chunksOf(members, chunkSize)) added += yield* apply("add", chunk)
        // Every stored member not in the new membership, found a page at a time. Keyset paging
        // stays correct while the rows behind the cursor are deleted.
        let removed = 0
        let after: string | undefined = undefined
        while (true) {
          const page: ReadonlyArray<string> = yield* store.audienceMembersPage(ref, after, chunkSize)
          if (page.length === 0) break
          after = page[page.length - 1]
          const gone = page.filter((userId) => !incoming.has(userId))
          if (gone.length > 0) removed += yield* apply("remove", gone)
          if (page.length < chunkSize) break
        }
        return { property, added, removed, unchanged: incoming.size - added } satisfies AudienceSyncResult
      })

      return yield* run.pipe(
        Effect.onExit((exit) =>
          Clock.currentTimeMillis.pipe(
            Effect.flatMap((now) => store.endAudienceSync(ref, owner, now, Exit.isSuccess(exit))),
            // The lease lapses by itself if it cannot be given back now.
            Effect.catchAll((error) => Effect.logWarning("could not release an audience sync lease", error.message))
          )
        )
      )
    })

  return { syncAudience }
}
