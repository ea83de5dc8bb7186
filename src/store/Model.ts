import type { Effect, Option } from "effect"
import type { SourceConfig, WebhookSettings } from "../domain/Settings.js"
import type { StoreError, WriteKeyConflict } from "./StoreError.js"

/**
 * Everything the store keeps, as the rest of hookrelay sees it. Times are epoch milliseconds
 * passed in by the caller (read from Effect's `Clock`); the store never reads the wall clock.
 */

/** A message seen for the same source within this window is a duplicate (SPEC §2). */
export const dedupeWindowMs = 24 * 60 * 60 * 1000

export type JobStatus = "pending" | "delivering" | "delivered" | "dead"
export type JobKind = "message" | "delete" | "audience"
/** `aborted`: the attempt was cut short on our side (another URL succeeded first, or shutdown). */
export type AttemptOutcome = "success" | "retryable" | "permanent" | "aborted"

/** A source as stored: its configuration plus bookkeeping times. */
export interface StoredSource {
  readonly id: string
  readonly writeKey: string
  readonly webhooks?: WebhookSettings
  readonly createdAt: number
  readonly updatedAt: number
}

/** One message of an ingest request. `body` is absent when the message is accepted but not delivered. */
export interface EnqueueEntry {
  readonly messageId: string
  readonly userId?: string | undefined
  /** The exact bytes to POST, serialized once at ingest. */
  readonly body?: Uint8Array | undefined
  /** Counted as `filtered` in the usage counters (SPEC §10, §11); only meaningful without a body. */
  readonly filtered?: boolean | undefined
  /** The message's type and event, kept with its job for the message log (SPEC §12). */
  readonly type?: string | undefined
  readonly event?: string | undefined
}

/**
 * Which counts `Store.backlog` makes (each is one walk of its status's index); a count left out is reported as 0.
 * Delivered jobs are all those retention keeps (7 days of traffic by default: millions of rows on a busy source),
 * so what counts periodically leaves them out: the walk grows with every day a server runs (≈ 40 ms per million
 * rows on SQLite, on the read-only connection of a file store; on the writing one, in front of every ingest commit,
 * where there is no reader).
 */
export interface BacklogOptions {
  /** Count delivered jobs (default true). */
  readonly delivered?: boolean | undefined
  /** Count dead letters (default true). */
  readonly dead?: boolean | undefined
}

export interface EnqueueOptions {
  /** Count this call as one tracking API request in the usage counters (default true). */
  readonly countApiCall?: boolean | undefined
}

export interface EnqueueResult {
  /** Entries that were not duplicates (with or without a job). */
  readonly accepted: number
  readonly duplicates: number
  readonly jobsCreated: number
  readonly jobIds: ReadonlyArray<string>
  readonly duplicateMessageIds: ReadonlyArray<string>
}

/** A job inserted without deduplication (delete notifications, audience identifies). */
export interface NewJob {
  readonly sourceId: string
  readonly messageId: string
  readonly userId?: string | undefined
  /** Not "message": a message's job comes with its dedupe, from `enqueue` alone. */
  readonly kind: Exclude<JobKind, "message">
  readonly body: Uint8Array
}

export interface ClaimOptions {
  /** Leave these sources' jobs for later (their mailbox in the claiming dispatcher is full). */
  readonly excludeSourceIds?: ReadonlyArray<string> | undefined
  /** Also take over jobs whose lease expired (a stopped process's). Default true. */
  readonly expired?: boolean | undefined
}

/** A job handed to a dispatcher by `claimDue`; it holds the lease until `leaseExpiresAt`. */
export interface ClaimedJob {
  readonly id: string
  readonly sourceId: string
  readonly messageId: string
  readonly userId: string | null
  readonly kind: JobKind
  readonly body: Uint8Array
  readonly createdAt: number
  /** Start of the 4 h retry window, kept across restarts and lease takeovers; null before any attempt. */
  readonly firstAttemptAt: number | null
  readonly nextDueAt: number
  readonly attemptCount: number
  /** The dispatcher's own JSON (per-URL progress); `null` until it stores one. Opaque to the store. */
  readonly endpointState: unknown
  readonly leaseExpiresAt: number
}

/** One HTTP attempt, as recorded. `responseSnippet` is cut to 1 KB (UTF-8) by the store. */
export interface AttemptRecord {
  readonly jobId: string
  readonly url: string
  readonly attempt: number
  readonly startedAt: number
  readonly durationMs: number
  readonly statusCode?: number | null | undefined
  readonly error?: string | null | undefined
  readonly outcome: AttemptOutcome
  readonly responseSnippet?: string | null | undefined
}

export interface StoredAttempt {
  readonly jobId: string
  readonly url: string
  readonly attempt: number
  readonly startedAt: number
  readonly durationMs: number
  readonly statusCode: number | null
  readonly error: string | null
  readonly outcome: AttemptOutcome
  readonly responseSnippet: string | null
}

/** How a claimed job ends (or pauses). Applied only while the caller still holds the lease. */
export type Completion =
  | {
    readonly _tag: "Delivered"
    readonly jobId: string
    readonly at: number
    readonly firstAttemptAt?: number | undefined
    readonly endpointState?: unknown
    /**
     * The job's source and creation time, as its claim gave them (both or neither): the delivery's usage is counted
     * from them instead of reading the job back (the SQLite store; PostgreSQL reads them in the same statement).
     */
    readonly sourceId?: string | undefined
    readonly createdAt?: number | undefined
  }
  | {
    readonly _tag: "Retry"
    readonly jobId: string
    readonly nextDueAt: number
    readonly firstAttemptAt: number
    readonly endpointState: unknown
    readonly lastError: string | null
  }
  | {
    readonly _tag: "Dead"
    readonly jobId: string
    readonly at: number
    readonly lastError: string | null
    readonly firstAttemptAt?: number | undefined
    readonly endpointState?: unknown
  }

export interface CompleteResult {
  /** Jobs whose transition was applied. */
  readonly applied: ReadonlyArray<string>
  /** Jobs the caller no longer holds (lease taken over, or not delivering): left untouched. */
  readonly refused: ReadonlyArray<string>
}

/** A job without its body, for the admin API and the console. */
export interface JobSummary {
  readonly id: string
  readonly sourceId: string
  readonly messageId: string
  readonly userId: string | null
  readonly kind: JobKind
  readonly status: JobStatus
  readonly createdAt: number
  readonly firstAttemptAt: number | null
  readonly nextDueAt: number
  readonly attemptCount: number
  readonly leaseOwner: string | null
  readonly leaseExpiresAt: number | null
  readonly finishedAt: number | null
  readonly lastError: string | null
}

export interface JobWithAttempts extends JobSummary {
  readonly attempts: ReadonlyArray<StoredAttempt>
}

export interface Backlog {
  readonly pending: number
  readonly delivering: number
  readonly delivered: number
  readonly dead: number
}

export interface UsageDelta {
  readonly apiCalls?: number | undefined
  readonly messages?: number | undefined
  readonly filtered?: number | undefined
  readonly delivered?: number | undefined
  readonly dead?: number | undefined
}

/** Counters of one source for one UTC day (`day` is `YYYY-MM-DD`). */
export interface UsageDay {
  readonly day: string
  readonly apiCalls: number
  readonly messages: number
  readonly filtered: number
  readonly delivered: number
  readonly dead: number
  /**
   * Mean of (delivered time − received time) over the jobs delivered that day, in whole
   * milliseconds; `null` when none was.
   */
  readonly averageLatencyMs: number | null
}

/** What the message log asks for: a user's messages (optionally of one source), or a source's. */
export interface MessageSearch {
  readonly userId?: string | undefined
  readonly sourceId?: string | undefined
  readonly limit: number
}

/**
 * One message as the message log shows it: what came in through one source, with its jobs.
 * Known only through its jobs: a message that created none (filtered, disabled destination) is
 * not there.
 */
export interface MessageRecord {
  readonly messageId: string
  readonly sourceId: string
  readonly userId: string | null
  /** The message type; `delete` for a deletion notification; `null` for jobs stored before it was kept. */
  readonly type: string | null
  readonly event: string | null
  /** When the newest of its jobs was created (the message's receipt). */
  readonly receivedAt: number
  readonly jobs: ReadonlyArray<JobWithAttempts>
}

/** A delete notification to insert with a deletion request: one per source whose destination is enabled. */
export interface DeletionNotificationJob {
  readonly sourceId: string
  readonly messageId: string
  /** The exact SPEC §3 delete body. */
  readonly body: Uint8Array
}

export interface NewDeletion {
  readonly id: string
  readonly userId: string
  /** The sources the request covers, as recorded and shown (every source when the request named none). */
  readonly sourceIds: ReadonlyArray<string>
  /**
   * Remove the user's undelivered jobs of every source, including sources deleted since their jobs
   * were queued (the request named no source); otherwise only those of `sourceIds`.
   */
  readonly everySource: boolean
  readonly notifications: ReadonlyArray<DeletionNotificationJob>
}

export interface DeletionRecorded {
  /** Jobs of the user removed before delivery (pending or dead), with their attempts. */
  readonly jobsRemoved: number
  readonly notifications: ReadonlyArray<{ readonly sourceId: string; readonly jobId: string }>
}

/** A delete notification as `getDeletion` shows it. `job` is absent once retention purged the job. */
export interface DeletionNotification {
  readonly sourceId: string
  readonly jobId: string
  readonly job: Option.Option<JobSummary>
}

export interface StoredDeletion {
  readonly id: string
  readonly userId: string
  readonly sourceIds: ReadonlyArray<string>
  readonly createdAt: number
  readonly jobsRemoved: number
  readonly notifications: ReadonlyArray<DeletionNotification>
}

/** One audience of one source; `audience` is its name as the admin API was given it. */
export interface AudienceRef {
  readonly sourceId: string
  readonly audience: string
}

/** How `startAudienceSync` went: the lease is ours, another sync holds it, or another audience has the property. */
export type AudienceSyncStart =
  | {
    readonly _tag: "Started"
    /** The audience did not exist before this sync: it has no members yet. */
    readonly created: boolean
  }
  | { readonly _tag: "Busy"; readonly leaseExpiresAt: number }
  | { readonly _tag: "PropertyTaken"; readonly audience: string }

/**
 * Builds the identify job of one changed user (its message id and exact body), inside the store's
 * transaction, so the job commits with the change it reports. `value` is the trait value sent:
 * `true`/`false` for memberships, the new value (or `null` when cleared) for computed traits.
 */
export type IdentifyJobBuilder = (
  userId: string,
  value: unknown
) => {
  readonly messageId: string
  /**
   * The body's JSON text, as `JSON.stringify` writes it (so it is well-formed UTF-16: no lone
   * surrogate, no raw NUL); the store stores its UTF-8 bytes, which are the bytes sent and signed.
   */
  readonly bodyText: string
}

/** One chunk of an audience sync, applied in one transaction while `owner` holds the audience's sync lease. */
export interface AudienceChunk {
  readonly ref: AudienceRef
  readonly owner: string
  readonly now: number
  /** The lease is extended to this time by the chunk's transaction. */
  readonly leaseUntil: number
  /** `add`: insert these members (the ones already present are unchanged); `remove`: delete them. */
  readonly change: "add" | "remove"
  readonly userIds: ReadonlyArray<string>
  /** Absent: memberships change and nothing is sent (the destination is disabled). */
  readonly identify?: IdentifyJobBuilder | undefined
}

/** `LeaseLost`: another sync took the audience over (ours outlived its lease); nothing was applied. */
export type AudienceChunkResult =
  | { readonly _tag: "Applied"; readonly changed: number; readonly jobsCreated: number }
  | { readonly _tag: "LeaseLost" }

/** One chunk of a computed-trait sync. `value` is the value's JSON text, or `null` to clear it. */
export interface TraitChunk {
  readonly sourceId: string
  /** The trait as sent (its snake_case property name). */
  readonly trait: string
  readonly now: number
  readonly values: ReadonlyArray<readonly [userId: string, value: string | null]>
  readonly identify?: IdentifyJobBuilder | undefined
}

export interface TraitChunkResult {
  /** Users whose value was new or different and is now stored. */
  readonly changed: number
  /** Users whose stored value was cleared by `null`. */
  readonly cleared: number
  readonly jobsCreated: number
}

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
}
