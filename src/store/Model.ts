import type { Effect, Option } from "effect"
import type { SourceConfig } from "../domain/Settings.js"
import type { DeadLetterFilter, DisabledEndpoint, EndpointLastAttempts, EndpointStats } from "./EndpointRecords.js"
import type {
  AttemptRecord,
  AudienceChunk,
  AudienceChunkResult,
  AudienceRef,
  AudienceSyncStart,
  Backlog,
  BacklogOptions,
  ClaimedJob,
  ClaimOptions,
  CompleteResult,
  Completion,
  DeletionRecorded,
  EnqueueEntry,
  EnqueueOptions,
  EnqueueResult,
  JobSummary,
  JobWithAttempts,
  MessageRecord,
  MessageSearch,
  NewDeletion,
  NewJob,
  StoredDeletion,
  StoredSource,
  TraitChunk,
  TraitChunkResult,
  UsageDay,
  UsageDelta
} from "./Records.js"
import type { StoreError, WriteKeyConflict } from "./StoreError.js"

/** The store's interface, and (re-exported) the records it takes and gives (`Records`). */
export * from "./EndpointRecords.js"
export * from "./Records.js"

export interface StoreShape {
  // --- sources -------------------------------------------------------------------------------
  readonly upsertSource: (
    source: SourceConfig,
    now: number
  ) => Effect.Effect<StoredSource, StoreError | WriteKeyConflict>
  readonly getSource: (id: string) => Effect.Effect<Option.Option<StoredSource>, StoreError>
  /** Looks the key up by its SHA-256, then compares the key itself in constant time. */
  readonly findSourceByWriteKey: (writeKey: string) => Effect.Effect<Option.Option<StoredSource>, StoreError>
  readonly listSources: () => Effect.Effect<ReadonlyArray<StoredSource>, StoreError>
  /** Removes the source (not its jobs). `false` when there was no such source. */
  readonly deleteSource: (id: string) => Effect.Effect<boolean, StoreError>

  // --- ingest ----------------------------------------------------------------------------------
  /**
   * One transaction per ingest request: dedupe each entry against the last 24 h (and earlier
   * entries of the same request), mark the rest seen, insert a pending job (due `now`) for each
   * entry with a body, and count usage.
   */
  readonly enqueue: (
    sourceId: string,
    entries: ReadonlyArray<EnqueueEntry>,
    now: number,
    options?: EnqueueOptions
  ) => Effect.Effect<EnqueueResult, StoreError>
  /** Inserts pending jobs without deduplication; returns their ids in order. */
  readonly insertJobs: (jobs: ReadonlyArray<NewJob>, now: number) => Effect.Effect<ReadonlyArray<string>, StoreError>

  // --- dispatch --------------------------------------------------------------------------------
  /**
   * Takes up to `limit` jobs that are pending and due, or delivering with an expired lease, marks
   * them delivering under `owner` until `now + leaseMs`, and returns them ordered by due time.
   * `owner` must be unique per process (start).
   */
  readonly claimDue: (
    owner: string,
    now: number,
    limit: number,
    leaseMs: number,
    options?: ClaimOptions
  ) => Effect.Effect<ReadonlyArray<ClaimedJob>, StoreError>
  /** Extends the leases `owner` still holds; returns the ids it still holds. */
  readonly renewLeases: (
    owner: string,
    jobIds: ReadonlyArray<string>,
    until: number
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Graceful shutdown: every job leased by `owner` (or only `jobIds`) back to pending, window kept. */
  readonly releaseLeases: (owner: string, jobIds?: ReadonlyArray<string>) => Effect.Effect<number, StoreError>
  /**
   * At a dispatcher's start on a store one process owns (SQLite): every job still marked delivering was
   * leased by a process that died, so it goes back to pending now instead of after its lease. A no-op on
   * PostgreSQL, where other live processes hold leases. Returns the jobs taken back.
   */
  readonly recoverAbandonedLeases: () => Effect.Effect<number, StoreError>
  /** Inserts attempts and adds them to their jobs' attempt counts (not lease-guarded: they happened). */
  readonly recordAttempts: (records: ReadonlyArray<AttemptRecord>) => Effect.Effect<void, StoreError>
  /** Persists the start of the retry window if it is not set yet; `false` when it already was. */
  readonly markFirstAttempt: (jobId: string, at: number) => Effect.Effect<boolean, StoreError>
  readonly markDelivered: (owner: string, jobId: string, now: number) => Effect.Effect<boolean, StoreError>
  readonly reschedule: (
    owner: string,
    jobId: string,
    nextDueAt: number,
    firstAttemptAt: number,
    endpointState: unknown,
    lastError: string | null
  ) => Effect.Effect<boolean, StoreError>
  readonly markDead: (
    owner: string,
    jobId: string,
    now: number,
    lastError: string | null
  ) => Effect.Effect<boolean, StoreError>
  /**
   * The batched form: records `attempts` and applies `completions` in one transaction, each
   * completion only if `owner` still holds that job's lease. Counts delivered/dead usage.
   */
  readonly completeMany: (
    owner: string,
    completions: ReadonlyArray<Completion>,
    attempts?: ReadonlyArray<AttemptRecord>
  ) => Effect.Effect<CompleteResult, StoreError>
  /** The earliest time a claim could find work (a pending job due, or a lease expiring). */
  readonly nextWakeAt: () => Effect.Effect<Option.Option<number>, StoreError>

  // --- admin -----------------------------------------------------------------------------------
  readonly getJob: (jobId: string) => Effect.Effect<Option.Option<JobSummary>, StoreError>
  readonly jobsForMessage: (messageId: string) => Effect.Effect<ReadonlyArray<JobWithAttempts>, StoreError>
  /** Newest first. `before` pages by finished time. */
  readonly listDeadLetters: (options: {
    readonly sourceId?: string | undefined
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<JobSummary>, StoreError>
  /** Dead → pending, due `now`, with a fresh 4 h window and reset endpoint state. `false` if not dead. */
  readonly replayDeadLetter: (jobId: string, now: number) => Effect.Effect<boolean, StoreError>
  /**
   * Jobs by status. `{ delivered: false, dead: false }` counts only pending and delivering jobs (the others
   * answer 0): those two counts come from small indexes, while the delivered jobs' index holds every job kept
   * for the retention period (≈ 40 ms to count a million on SQLite, on the connection every commit waits for).
   */
  readonly backlog: (options?: BacklogOptions) => Effect.Effect<Backlog, StoreError>
  readonly addUsage: (sourceId: string, now: number, delta: UsageDelta) => Effect.Effect<void, StoreError>
  /** `days` UTC days ending with the day of `now`, oldest first, zeros included. */
  readonly usage: (sourceId: string, now: number, days: number) => Effect.Effect<ReadonlyArray<UsageDay>, StoreError>
  /**
   * Messages newest first, at most `limit`, each with all its jobs and their attempts: the newest
   * jobs in id order (ids start with their creation time), of the user and/or the source. There is
   * no index by user: a user's search reads back through the outbox until it has `limit` jobs.
   */
  readonly searchMessages: (search: MessageSearch) => Effect.Effect<ReadonlyArray<MessageRecord>, StoreError>

  // --- retention -------------------------------------------------------------------------------
  /** Deletes delivered jobs finished before `olderThan`, with their attempts. Returns jobs deleted. */
  readonly purgeDelivered: (olderThan: number) => Effect.Effect<number, StoreError>
  /** Forgets message ids seen before `olderThan` (call with now − 24 h). Returns rows deleted. */
  readonly purgeSeen: (olderThan: number) => Effect.Effect<number, StoreError>
  /** Explicit admin purge of dead letters finished before `olderThan` (optionally of one source). */
  readonly purgeDeadLetters: (options: {
    readonly olderThan: number
    readonly sourceId?: string | undefined
  }) => Effect.Effect<number, StoreError>

  // --- deletion requests (SPEC §5) --------------------------------------------------------------
  /**
   * One transaction: removes the user's jobs that are not delivered yet — `pending` and `dead`,
   * with their attempts; never `delivering` ones, which a dispatcher holds and is sending right
   * now, nor earlier delete notifications — together with the user's audience memberships and
   * computed traits in those sources (what the receiver was told is now forgotten there, so a
   * later sync sends it again); inserts the delete notification jobs; records the request.
   */
  readonly recordDeletion: (deletion: NewDeletion, now: number) => Effect.Effect<DeletionRecorded, StoreError>
  readonly getDeletion: (id: string) => Effect.Effect<Option.Option<StoredDeletion>, StoreError>

  // --- audiences and computed traits (SPEC §6) --------------------------------------------------
  /**
   * Creates the audience on its first sync and takes its sync lease for `owner` until
   * `leaseUntil`, unless another owner holds an unexpired lease (`Busy`) or another audience of
   * the source is sent as the same property (`PropertyTaken`).
   */
  readonly startAudienceSync: (
    ref: AudienceRef,
    property: string,
    owner: string,
    now: number,
    leaseUntil: number
  ) => Effect.Effect<AudienceSyncStart, StoreError>
  /**
   * Applies one chunk in one transaction: the membership change and the identify job of each
   * member actually added or removed (the write statement itself reports which: concurrent
   * writers cannot both claim one change).
   */
  readonly applyAudienceChunk: (chunk: AudienceChunk) => Effect.Effect<AudienceChunkResult, StoreError>
  /** Which of `userIds` are members (one indexed look-up per id, one statement). */
  readonly audienceMembersAmong: (
    ref: AudienceRef,
    userIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** The members after `after` (exclusive) in the store's order, at most `limit`: keyset paging. */
  readonly audienceMembersPage: (
    ref: AudienceRef,
    after: string | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Gives the lease up (if `owner` still holds it); `completed` also records the sync time. */
  readonly endAudienceSync: (
    ref: AudienceRef,
    owner: string,
    now: number,
    completed: boolean
  ) => Effect.Effect<void, StoreError>
  /**
   * Stores one chunk of trait values in one transaction and inserts an identify job for each user
   * whose value was new or different (the upsert itself reports which), or was cleared by `null`.
   */
  readonly applyTraitChunk: (chunk: TraitChunk) => Effect.Effect<TraitChunkResult, StoreError>

  // --- endpoints (health, disabled URLs, bulk recovery) ----------------------------------------
  readonly disabledEndpoints: () => Effect.Effect<ReadonlyArray<DisabledEndpoint>, StoreError>
  /** Keeps the first disabling when the URL already is. */
  readonly disableEndpoint: (url: string, at: number, reason: string) => Effect.Effect<void, StoreError>
  /** `false` when the URL was not disabled. */
  readonly enableEndpoint: (url: string) => Effect.Effect<boolean, StoreError>
  /** The URL's attempts started at or after `since`: counts and latency percentiles. */
  readonly endpointStats: (url: string, since: number) => Effect.Effect<EndpointStats, StoreError>
  readonly endpointLastAttempts: (url: string) => Effect.Effect<EndpointLastAttempts, StoreError>
  /** Replays every dead letter the filter takes (as `replayDeadLetter`); `dryRun` only counts them. */
  readonly replayDeadLetters: (
    filter: DeadLetterFilter,
    now: number,
    dryRun: boolean
  ) => Effect.Effect<number, StoreError>
  /** Deletes every dead letter the filter takes, with its attempts; `dryRun` only counts them. */
  readonly purgeDeadLettersMatching: (filter: DeadLetterFilter, dryRun: boolean) => Effect.Effect<number, StoreError>
}
