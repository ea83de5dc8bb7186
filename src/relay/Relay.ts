import { Context, type Effect, type Stream } from "effect"
import type { BatchDefaults, BatchError } from "../domain/Batch.js"
import type { DeliveryOutcome } from "../domain/DeliveryOutcome.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import type { MessageType } from "../domain/Message.js"
import type { Overloaded } from "../overload/Overloaded.js"
import type { StoredSource } from "../store/Model.js"
import type { StoreError } from "../store/StoreError.js"
import type { StoreStatus } from "../store/StoreHealth.js"
import type { RelayAccess } from "./services/RelayAccess.js"
import type { RelayAudiences } from "./services/RelayAudiences.js"
import type { RelayDestinations } from "./services/RelayDestinations.js"
import type { RelayEndpoints } from "./services/RelayEndpoints.js"
import type { RelayMessages } from "./services/RelayMessages.js"
import type { RelaySources } from "./services/RelaySources.js"

// The types of the library surface, for its adapters (the HTTP server) and its users: they reach the store's and
// admission's types through Relay, not around it.
export { destinationDeletedReason, UnknownDestination } from "../domain/DestinationErrors.js"
export type { Overloaded } from "../overload/Overloaded.js"
export { logStatuses } from "../store/MessageLogQuery.js"
export type {
  LogDestination,
  LogMessage,
  LogStatus,
  MessageLogPage,
  MessageLogQuery
} from "../store/MessageLogQuery.js"
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

export { defaultLogLimit, logQueryIssues, maxLogLimit } from "./RelayMessageLog.js"

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
/**
 * A source as saved; `generatedSecret` is the Standard Webhooks secret generated for the destination `webhooks`,
 * `generatedSecrets` those generated for the others, by destination id: each shown this once.
 */
export type SavedSource = StoredSource & {
  readonly generatedSecret?: string
  readonly generatedSecrets?: Readonly<Record<string, string>>
}

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

export { RelayAccess, type RelayAccessShape } from "./services/RelayAccess.js"
export { RelayAudiences, type RelayAudiencesShape } from "./services/RelayAudiences.js"
export { RelayDestinations, type RelayDestinationsShape, type SavedDestination } from "./services/RelayDestinations.js"
export { RelayEndpoints, type RelayEndpointsShape } from "./services/RelayEndpoints.js"
export { RelayMessages, type RelayMessagesShape } from "./services/RelayMessages.js"
export { RelaySources, type RelaySourcesShape } from "./services/RelaySources.js"

/** Every service of the engine, as `layerEngine` (`layerSqlite`, `layerPg`) provides them. */
export type RelayServices =
  | Relay
  | RelaySources
  | RelayDestinations
  | RelayMessages
  | RelayEndpoints
  | RelayAudiences
  | RelayAccess
