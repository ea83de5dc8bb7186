import type { Option } from "effect"
import type { AttemptRecord as DomainAttemptRecord, AttemptRecordInput } from "../domain/AttemptRecord.js"
import type { Destination, WebhookSettings } from "../domain/Settings.js"

/**
 * Everything the store keeps, as the rest of hookrelay sees it. Times are epoch milliseconds
 * passed in by the caller (read from Effect's `Clock`); the store never reads the wall clock.
 */

/** A message seen for the same source within this window is a duplicate (REFERENCE §2). */
export const dedupeWindowMs = 24 * 60 * 60 * 1000

export type JobStatus = "pending" | "delivering" | "delivered" | "dead"
export type JobKind = "message" | "delete" | "audience"
export type { AttemptOutcome } from "../domain/AttemptRecord.js"

/** A source as stored: its configuration plus bookkeeping times. */
export interface StoredSource {
  readonly id: string
  readonly writeKey: string
  /** Every destination of the source, the destination `webhooks` first (REFERENCE §1a). */
  readonly destinations: ReadonlyArray<Destination>
  /** The destination `webhooks` as the `webhooks` object (without its id), when the source has it. */
  readonly webhooks?: WebhookSettings
  readonly createdAt: number
  readonly updatedAt: number
}

/** One message of an ingest request. `body` is absent when the message is accepted but not delivered. */
export interface EnqueueEntry {
  readonly messageId: string
  readonly userId?: string | undefined
  /** Kept in the message log only (REFERENCE §12). */
  readonly anonymousId?: string | undefined
  /** The exact bytes to POST, serialized once at ingest. */
  readonly body?: Uint8Array | undefined
  /** With a body: the destinations it gets a job for, one each (default: the destination `webhooks` alone). */
  readonly destinationIds?: ReadonlyArray<string> | undefined
  /** Counted as `filtered` in the usage counters (REFERENCE §10, §11); only meaningful without a body. */
  readonly filtered?: boolean | undefined
  /** The message's type and event, kept with its job for the message log (REFERENCE §12). */
  readonly type?: string | undefined
  readonly event?: string | undefined
}

/**
 * Which counts `Outbox.backlog` makes (each is one walk of its status's index); a count left out is reported as 0.
 * Delivered jobs are all those retention keeps (7 days of traffic by default: millions of rows on a busy source),
 * so what counts periodically leaves them out: the walk grows with every day a server runs (on SQLite, on the
 * read-only connection of a file store; on the writing one, in front of every ingest commit,
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
  /** The W3C `traceparent` of the request that made these jobs, stored with each (telemetry on only). */
  readonly traceparent?: string | undefined
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
  /** Default: the destination `webhooks`. */
  readonly destinationId?: string | undefined
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
  /** The destination of the source the job delivers to: its URLs, signing, window and deadline. */
  readonly destinationId: string
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
  /** The `traceparent` stored with the job; absent when it has none (telemetry off), not even as a property. */
  readonly traceparent?: string | undefined
}

/** One HTTP attempt handed to the store. `responseSnippet` is cut to 1 KB (UTF-8) by the store. */
export type AttemptRecord = AttemptRecordInput

/** One HTTP attempt as the store gives it back: the domain record, every absent part `null`. */
export type StoredAttempt = DomainAttemptRecord

/** How a claimed job ends (or pauses). Applied only while the caller still holds the lease. */
export type Completion =
  | {
    readonly _tag: "Delivered"
    readonly jobId: string
    readonly at: number
    readonly firstAttemptAt?: number | undefined
    readonly endpointState?: unknown
    /**
     * The job's source, destination and creation time, as its claim gave them (all or none): the delivery's usage is
     * counted from them instead of reading the job back (the SQLite store; PostgreSQL reads them in the same
     * statement).
     */
    readonly sourceId?: string | undefined
    readonly destinationId?: string | undefined
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
  readonly destinationId: string
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
/** One delete notice: a job of one destination of one source. */
export interface DeletionNotificationJob {
  readonly sourceId: string
  readonly destinationId: string
  readonly messageId: string
  /** The exact REFERENCE §3 delete body. */
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
  readonly notifications: ReadonlyArray<
    { readonly sourceId: string; readonly destinationId: string; readonly jobId: string }
  >
}

/** A delete notification as `getDeletion` shows it. `job` is absent once retention purged the job. */
export interface DeletionNotification {
  readonly sourceId: string
  readonly destinationId: string
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

/** The identify of each user a chunk changed, sent to each of these destinations (one job each). */
export interface IdentifyJobs {
  readonly build: IdentifyJobBuilder
  readonly destinationIds: ReadonlyArray<string>
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
  /** Absent (or no destination): memberships change and nothing is sent. */
  readonly identify?: IdentifyJobs | undefined
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
  readonly identify?: IdentifyJobs | undefined
}

export interface TraitChunkResult {
  /** Users whose value was new or different and is now stored. */
  readonly changed: number
  /** Users whose stored value was cleared by `null`. */
  readonly cleared: number
  readonly jobsCreated: number
}
