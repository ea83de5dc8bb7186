import { Context, type Duration, type Effect, type Stream } from "effect"
import type {
  AudienceSyncError,
  InvalidAdminRequest,
  UnknownDeletion,
  UnknownSources
} from "../audiences/AudienceErrors.js"
import type { AudienceSyncResult } from "../audiences/AudienceSync.js"
import type { TraitSyncResult } from "../audiences/ComputedTraits.js"
import type { DeletionRequest, DeletionStatus } from "../audiences/Deletions.js"
import type { TraitValue } from "../audiences/Input.js"
import type { BatchDefaults, BatchError } from "../domain/Batch.js"
import type { DeliveryOutcome } from "../domain/DeliveryOutcome.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import type { MessageType } from "../domain/Message.js"
import type { SourceConfig } from "../domain/Settings.js"
import type { BlockedEndpoints } from "../network/EgressPolicy.js"
import type { Overloaded } from "../overload/Overloaded.js"
import type {
  Backlog,
  JobSummary,
  JobWithAttempts,
  MessageRecord,
  MessageSearch,
  StoredSource,
  UsageDay
} from "../store/Model.js"
import type { StoreError, WriteKeyConflict } from "../store/StoreError.js"
import type { StoreStatus } from "../store/StoreHealth.js"
import type { EndpointHealth, RecoveryRequest, RecoveryResult } from "./RelayEndpoints.js"

// The types of the library surface, for its adapters (the HTTP server) and its users: they reach the store's and
// admission's types through Relay, not around it.
export type { Overloaded } from "../overload/Overloaded.js"
export type {
  JobSummary,
  JobWithAttempts,
  MessageRecord,
  StoredAttempt,
  StoredSource,
  UsageDay
} from "../store/Model.js"
export { isStoreUnavailable } from "../store/StoreError.js"
export type { StoreError, WriteKeyConflict } from "../store/StoreError.js"
export type {
  EndpointHealth,
  EndpointState,
  EndpointWindow,
  RecoveryRequest,
  RecoveryResult
} from "./RelayEndpoints.js"

/** Days `usage` reports by default, and at most (a leap year). */
export const defaultUsageDays = 30
export const maxUsageDays = 366

/** Messages `searchMessages` returns by default, and at most. */
export const defaultSearchLimit = 50
export const maxSearchLimit = 500

export interface IngestOptions {
  /** The type fixed by a single-message endpoint (`/v1/track`); a `type` in the message must agree. */
  readonly expectedType?: MessageType | undefined
  /** Batch-level `context` / `integrations`, merged under each message's own. */
  readonly defaults?: BatchDefaults | undefined
  /** Batch-level `sentAt`, used for clock-skew correction when a message has none. */
  readonly batchSentAt?: string | undefined
  /** Counts the call as one tracking-API request in usage (HTTP ingest sets it). */
  readonly apiCall?: boolean | undefined
  /** What no message can serialize beyond, known from the request's text (`serializedSizeBound`). */
  readonly sizeBound?: number | undefined
  /** The W3C `traceparent` of the traced request (telemetry on), stored with the jobs for their deliveries. */
  readonly traceparent?: string | undefined
}

export interface IngestResult {
  /** Messages accepted (duplicates included: they are answered 200 too). */
  readonly accepted: number
  /** Messages whose `messageId` was seen for this source in the last 24 hours: not delivered again. */
  readonly duplicates: number
  /** Delivery jobs created (accepted messages minus duplicates, filtered and unrouted ones). */
  readonly jobs: number
  /** The message ids, in request order (generated where the message had none). */
  readonly messageIds: ReadonlyArray<string>
}

/** A source as `putSource` saved it, with the Standard Webhooks secret it generated (shown once). */
export type SavedSource = StoredSource & { readonly generatedSecret?: string }

/** The answer of a rotation: the new primary secret in full (shown once) and the source as saved. */
export interface RotatedSecret {
  readonly secret: string
  readonly id: string
  /** ISO 8601. */
  readonly createdAt: string
  readonly source: StoredSource
}

export interface RelayShape {
  /**
   * Validates, stamps, routes and commits a request's messages to the outbox, all or nothing.
   * Returns only after the store committed. Fails with `Overloaded`, nothing stored, when the
   * backlog is over its bound or no ingest slot came free in time (see `OverloadOptions`).
   */
  readonly ingest: (
    sourceId: string,
    messages: ReadonlyArray<unknown>,
    options?: IngestOptions
  ) => Effect.Effect<IngestResult, BatchError | UnknownSource | Overloaded | StoreError>
  /** The source a write key belongs to (compared in constant time). */
  readonly authenticate: (writeKey: string) => Effect.Effect<StoredSource, UnknownSource | StoreError>
  /**
   * Every job that ends from the moment of subscription on: delivered (with the URL that took it)
   * or dead-lettered (with the reason). A subscriber that falls more than 16 384 outcomes behind
   * loses the oldest; the store keeps every job's status regardless.
   */
  readonly outcomes: Stream.Stream<DeliveryOutcome>
  /**
   * Whether the store can answer (`/readyz`): asks it once (2 s at most), then reports what the calls through this
   * engine found. Never fails.
   */
  readonly storeStatus: Effect.Effect<StoreStatus>
}

/**
 * The hookrelay engine's ingest as a service: what the tracking API does, callable in-process, the outcomes of the jobs
 * it made, and the store's status. The admin's operations are the other `Relay*` services (`RelayServices`).
 */
export class Relay extends Context.Service<Relay, RelayShape>()("hookrelay/Relay") {}

export interface RelaySourcesShape {
  /**
   * Creates or replaces a source and its webhook settings (already validated as `SourceConfig`).
   * Fails with `BlockedEndpoints`, nothing stored, when an endpoint URL points at a loopback,
   * private or link-local address and private networks are not allowed (REFERENCE §8). Signing secrets and keys left
   * out are kept from the stored source; a Standard Webhooks scheme without a secret gets one (`generatedSecret`).
   */
  readonly putSource: (
    source: SourceConfig
  ) => Effect.Effect<SavedSource, BlockedEndpoints | WriteKeyConflict | StoreError>
  /**
   * Rotates a source's Standard Webhooks secret: a new primary (returned in full, once), and the others keep
   * signing for `keepOldFor` (a duration, default 24 hours) at most. At most 10 unexpired secrets.
   */
  readonly rotateSecret: (
    sourceId: string,
    keepOldFor?: Duration.Input
  ) => Effect.Effect<RotatedSecret, UnknownSource | InvalidAdminRequest | WriteKeyConflict | StoreError>
  readonly getSource: (sourceId: string) => Effect.Effect<StoredSource, UnknownSource | StoreError>
  readonly listSources: Effect.Effect<ReadonlyArray<StoredSource>, StoreError>
  /** Removes a source; its jobs stay until delivered, dead or purged. */
  readonly deleteSource: (sourceId: string) => Effect.Effect<void, UnknownSource | StoreError>
}

/** The sources and their webhook signing, as the admin API manages them. */
export class RelaySources extends Context.Service<RelaySources, RelaySourcesShape>()("hookrelay/RelaySources") {}

export interface RelayMessagesShape {
  /** Every job of a message (one per source it came through) with its attempts. */
  readonly messageJobs: (messageId: string) => Effect.Effect<ReadonlyArray<JobWithAttempts>, StoreError>
  readonly deadLetters: (options: {
    readonly sourceId?: string | undefined
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<JobSummary>, StoreError>
  /** Puts a dead letter back in the outbox with a fresh 4 h window; `false` when the job is not dead. */
  readonly replayDeadLetter: (jobId: string) => Effect.Effect<boolean, StoreError>
  readonly backlog: Effect.Effect<Backlog, StoreError>
  /**
   * A source's usage counters (REFERENCE §11) for the last `days` UTC days (1 to 366, default 30),
   * today (by `Clock`) last, oldest first, days without traffic as zeros.
   */
  readonly usage: (
    sourceId: string,
    days?: number
  ) => Effect.Effect<ReadonlyArray<UsageDay>, InvalidAdminRequest | UnknownSource | StoreError>
  /**
   * The message log (REFERENCE §12): a user's messages (of one source when `sourceId` is given too), or
   * a source's recent messages, newest first, each with its jobs and their attempts. `userId` or
   * `sourceId` is required; `limit` is 1 to 500. Messages that created no job (filtered, or no
   * enabled destination) are not listed: they are only counted.
   */
  readonly searchMessages: (
    search: MessageSearch
  ) => Effect.Effect<ReadonlyArray<MessageRecord>, InvalidAdminRequest | StoreError>
}

/** The message log, dead letters, the backlog and usage counters, as the admin API reads them. */
export class RelayMessages extends Context.Service<RelayMessages, RelayMessagesShape>()("hookrelay/RelayMessages") {}

export interface RelayEndpointsShape {
  /** The health of each URL of a source: state, failures, last success and failure, last hour and day. */
  readonly endpointHealth: (
    sourceId: string
  ) => Effect.Effect<ReadonlyArray<EndpointHealth>, UnknownSource | StoreError>
  /** Enables a disabled URL (in every process) with a fresh health; `false` when it was not disabled. */
  readonly enableEndpoint: (url: string) => Effect.Effect<boolean, StoreError>
  /** Disables a URL: its jobs are dead-lettered "endpoint disabled" until it is enabled again. */
  readonly disableEndpoint: (url: string, reason: string) => Effect.Effect<void, StoreError>
  /** Replays every dead letter of a source the filter takes (`dryRun`: only counts them). */
  readonly replayDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
  /** Deletes every dead letter of a source the filter takes, with its attempts (`dryRun`: only counts them). */
  readonly purgeDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
}

/** Endpoint URLs: their health, enabling and disabling them, bulk recovery of their dead letters. */
export class RelayEndpoints
  extends Context.Service<RelayEndpoints, RelayEndpointsShape>()("hookrelay/RelayEndpoints")
{}

export interface RelayAudiencesShape {
  /**
   * Deletion request (REFERENCE §5) for `sourceIds` (default: every source), in one transaction: one
   * delete notification job per covered source whose destination is enabled; the user's jobs not
   * delivered yet (pending or dead — not the ones being delivered at this moment) removed.
   */
  readonly deleteUser: (
    userId: string,
    sourceIds?: ReadonlyArray<string>
  ) => Effect.Effect<DeletionRequest, InvalidAdminRequest | UnknownSources | StoreError>
  /** A deletion request and each notification's job status. */
  readonly getDeletion: (id: string) => Effect.Effect<DeletionStatus, UnknownDeletion | StoreError>
  /**
   * Sets an audience's full membership (REFERENCE §6): an identify `{<snake_case name>: true|false}`
   * is enqueued for each user added or removed. Applied in chunks; see `makeAudienceSync`.
   */
  readonly syncAudience: (
    sourceId: string,
    audienceName: string,
    userIds: ReadonlyArray<string>
  ) => Effect.Effect<
    AudienceSyncResult,
    AudienceSyncError
  >
  /**
   * Updates a computed trait for the users in `values` (others are left alone; `null` clears):
   * an identify `{<snake_case name>: value}` for each user whose value is new or different.
   */
  readonly syncComputedTrait: (
    sourceId: string,
    traitName: string,
    values: Readonly<Record<string, TraitValue>>
  ) => Effect.Effect<TraitSyncResult, InvalidAdminRequest | UnknownSource | StoreError>
}

/** Deletion requests (REFERENCE §5), audience syncs and computed traits (REFERENCE §6). */
export class RelayAudiences
  extends Context.Service<RelayAudiences, RelayAudiencesShape>()("hookrelay/RelayAudiences")
{}

/** Every service of the engine, as `layerEngine` (`layerSqlite`, `layerPg`) provides them. */
export type RelayServices = Relay | RelaySources | RelayMessages | RelayEndpoints | RelayAudiences
