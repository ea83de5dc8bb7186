import { Clock, Effect, Exit, Option, Result } from "effect"
import { UnknownSource } from "../domain/IngestErrors.js"
import { uuidv7 } from "../domain/MessageId.js"
import { identifyDestinations } from "../domain/Routing.js"
import type { AudienceMembersShape } from "../store/AudienceMembers.js"
import type { AudienceRef, StoredSource } from "../store/Model.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { SourcesShape } from "../store/Sources.js"
import type { StoreError } from "../store/StoreError.js"
import {
  AudiencePropertyTaken,
  AudienceSyncInProgress,
  AudienceSyncInterrupted,
  InvalidAdminRequest
} from "./AudienceErrors.js"
import type { AudienceSyncError } from "./AudienceErrors.js"
import { chunks } from "./Chunks.js"
import { identifyJobs } from "./Identify.js"
import { maxSyncSize, sortedUnique, validateIdList, validateName } from "./Input.js"

/** What a sync changed (REFERENCE §6). `property` is the trait the audience is sent as. */
export interface AudienceSyncResult {
  readonly property: string
  readonly added: number
  readonly removed: number
  readonly unchanged: number
}

export interface SyncOptions {
  /** Members (or trait values) written per transaction. */
  readonly chunkSize?: number | undefined
  /** Members read per query (no transaction): looked up among the stored ones, or paged through. */
  readonly readSize?: number | undefined
  /** How long a sync's lease on its audience lasts without a chunk renewing it. */
  readonly leaseMillis?: number | undefined
}

/**
 * 1 000 members per write transaction: on SQLite an ingest commit waits behind a whole chunk, and
 * larger chunks (bench/audiences.ts) made it wait far longer for little speed and more peak memory.
 */
export const defaultChunkSize = 1_000
/** Reads take no write lock: larger pages, fewer round trips. */
export const defaultReadSize = 5_000
export const defaultLeaseMillis = 60_000

/**
 * Between chunks, give the event loop a turn: SQLite statements run synchronously, and without a macrotask here one
 * sync kept every socket, timer and ingest request waiting until it ended.
 * Effect's scheduler resumes a yielded fiber in a `setImmediate`; not `Effect.sleep`: it is not a delay, and it must
 * not wait for a `TestClock`.
 */
export const yieldToEventLoop: Effect.Effect<void> = Effect.yieldNow

/** Where a sync's identifies go: the enabled destinations subscribed to identifies (REFERENCE §6). */
export const identifyDestinationIds = (source: StoredSource): ReadonlyArray<string> =>
  identifyDestinations(source.destinations).map((destination) => destination.id)

/** The source, fresh from the store (a sync is rare; the ingest cache's 2 s staleness is not wanted here). */
export const sourceOf = (
  sources: SourcesShape,
  sourceId: string
): Effect.Effect<StoredSource, UnknownSource | StoreError> =>
  Effect.flatMap(
    sources.getSource(sourceId),
    Option.match({ onNone: () => Effect.fail(new UnknownSource({ sourceId })), onSome: Effect.succeed })
  )

/**
 * Audience membership sync (REFERENCE §6): the caller gives the full current membership; each user
 * whose membership changed gets an identify with `traits: {<property>: true}` (added) or `false`
 * (removed), through the outbox like any tracking call. The first sync is the same diff against
 * an empty membership, so every member gets `true`.
 *
 * How 100 000 members stay cheap and safe:
 * - Memory: only the incoming membership (already in memory: it is the request) is held, sorted
 *   and as a set, plus the ids found missing from the store; the stored membership is read
 *   `readSize` ids at a time — looked up among the incoming ones, then paged through by keyset on
 *   the primary key — never all at once.
 * - Writes: only the changes, in chunks of `chunkSize`, one transaction each, a few statements
 *   whose rows travel as one JSON / array parameter (never one statement per member): the members
 *   added (`INSERT … ON CONFLICT DO NOTHING RETURNING`) or removed (`DELETE … RETURNING`), and the
 *   identify job of exactly those users, commit together. So the stored membership is always
 *   exactly what the receiver has been (or is queued to be) told, whatever happens between chunks.
 * - Staged, not one transaction: on SQLite, the one connection serves ingest and the dispatcher
 *   too, and a transaction holds it from BEGIN to COMMIT. A large first sync takes seconds on
 *   SQLite (bench/audiences.ts): in one transaction every ingest request would wait that long;
 *   chunk by chunk, with the event loop given a turn between chunks, an ingest commit waits only
 *   for the chunk in progress (the benchmark's ingest probe measures it). The price is that
 *   a sync can stop half way (crash, store error, interruption): the chunks committed stand, each
 *   with its messages, and nothing is sent twice or lost; running the same sync again (a PUT of
 *   the full membership is idempotent) applies the rest and converges. PostgreSQL runs the same
 *   code: one behaviour for both stores, and short transactions there too.
 * - One sync per audience at a time, across processes sharing a PostgreSQL database: a lease on
 *   the audience row, taken at the start, renewed by every chunk's transaction (which also locks
 *   the row on PostgreSQL), released at the end. A second sync meanwhile is refused
 *   (`AudienceSyncInProgress`); a crashed sync's lease lapses after `leaseMillis`.
 * - Identifies go to each enabled destination subscribed to them, one job each. With none (all disabled, none
 *   subscribed): memberships are still updated and counted, nothing is sent.
 */
/** The store's services an audience sync uses. */
export interface AudienceStores {
  readonly sources: SourcesShape
  readonly members: AudienceMembersShape
}

export const makeAudienceSync = (stores: AudienceStores, signal: OutboxSignalShape, options: SyncOptions = {}) => {
  const chunkSize = Math.max(1, Math.floor(options.chunkSize ?? defaultChunkSize))
  const readSize = Math.max(1, Math.floor(options.readSize ?? defaultReadSize))
  const leaseMillis = options.leaseMillis ?? defaultLeaseMillis

  const syncAudience = (
    sourceId: string,
    audienceName: string,
    userIdsInput: ReadonlyArray<string>
  ): Effect.Effect<
    AudienceSyncResult,
    AudienceSyncError
  > =>
    Effect.gen(function*() {
      const name = validateName(audienceName, "audienceName")
      const ids = validateIdList(userIdsInput, "userIds", { max: maxSyncSize, dedupe: false })
      if (Result.isFailure(name) || Result.isFailure(ids)) {
        return yield* new InvalidAdminRequest({
          errors: [...Result.isFailure(name) ? name.failure : [], ...Result.isFailure(ids) ? ids.failure : []]
        })
      }
      const { property } = name.success
      const source = yield* sourceOf(stores.sources, sourceId)
      const destinationIds = identifyDestinationIds(source)
      // Sorted: each chunk's rows land in neighbouring primary-key pages (and duplicates collapse).
      const members = sortedUnique(ids.success)
      const incoming = new Set(members)
      const ref: AudienceRef = { sourceId: source.id, audience: name.success.name }

      const startedAt = yield* Clock.currentTimeMillis
      const owner = uuidv7(startedAt)
      const start = yield* stores.members.startAudienceSync(ref, property, owner, startedAt, startedAt + leaseMillis)
      if (start._tag === "Busy") {
        return yield* new AudienceSyncInProgress({ ...ref, leaseExpiresAt: start.leaseExpiresAt })
      }
      if (start._tag === "PropertyTaken") {
        return yield* new AudiencePropertyTaken({ ...ref, property, takenBy: start.audience })
      }

      const apply = (change: "add" | "remove", userIds: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const result = yield* stores.members.applyAudienceChunk({
            ref,
            owner,
            now,
            leaseUntil: now + leaseMillis,
            change,
            userIds,
            identify: { build: identifyJobs(property, now), destinationIds }
          })
          if (result._tag === "LeaseLost") return yield* new AudienceSyncInterrupted(ref)
          // Committed: wake the dispatcher now, so delivery starts while the sync goes on.
          if (result.jobsCreated > 0) yield* signal.notify
          yield* yieldToEventLoop
          return result.changed
        })

      const run = Effect.gen(function*() {
        // Added: the incoming members not stored yet, found by reading (no transaction), then
        // written in chunks: a 1 % diff writes 1 % of the members, not all of them.
        // A new audience has no members: everyone is added and nobody is removed.
        const additions: Array<string> = start.created ? members : []
        for (const chunk of start.created ? [] : chunks(members, readSize)) {
          const present = new Set(yield* stores.members.audienceMembersAmong(ref, chunk))
          if (present.size < chunk.length) {
            for (const userId of chunk) if (!present.has(userId)) additions.push(userId)
          }
          yield* yieldToEventLoop
        }
        let added = 0
        for (const chunk of chunks(additions, chunkSize)) added += yield* apply("add", chunk)
        // Removed: every stored member not in the new membership, found a page at a time and
        // deleted a chunk at a time. Keyset paging stays correct while rows behind the cursor go.
        let removed = 0
        let gone: Array<string> = []
        let after: string | undefined = undefined
        while (!start.created) {
          const page: ReadonlyArray<string> = yield* stores.members.audienceMembersPage(ref, after, readSize)
          if (page.length === 0) break
          after = page[page.length - 1]
          for (const userId of page) if (!incoming.has(userId)) gone.push(userId)
          if (gone.length >= chunkSize) {
            for (const chunk of chunks(gone, chunkSize)) removed += yield* apply("remove", chunk)
            gone = []
          } else {
            yield* yieldToEventLoop
          }
          if (page.length < readSize) break
        }
        for (const chunk of chunks(gone, chunkSize)) removed += yield* apply("remove", chunk)
        return { property, added, removed, unchanged: incoming.size - added } satisfies AudienceSyncResult
      })

      return yield* run.pipe(
        Effect.onExit((exit) =>
          Clock.currentTimeMillis.pipe(
            Effect.flatMap((now) => stores.members.endAudienceSync(ref, owner, now, Exit.isSuccess(exit))),
            // The lease lapses by itself if it cannot be given back now.
            Effect.catch((error) => Effect.logWarning("could not release an audience sync lease", error.message))
          )
        )
      )
    })

  return { syncAudience }
}
