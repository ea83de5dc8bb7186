/**
 * hookrelay as a library: run the webhook destination engine inside your own Effect service.
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Relay, RelaySources, layerSqlite } from "hookrelay"
 *
 * const program = Effect.gen(function*() {
 *   const relay = yield* Relay
 *   yield* (yield* RelaySources).putSource({
 *     id: "backend",
 *     writeKey: "wk_backend",
 *     webhooks: { enabled: true, sharedSecret: "s3cret", endpoints: [{ url: "https://example.com/hook" }] }
 *   })
 *   yield* relay.ingest("backend", [{ type: "track", userId: "u1", event: "Signed Up" }])
 * })
 *
 * program.pipe(Effect.provide(layerSqlite({ directory: "./data" })), NodeRuntime.runMain)
 * ```
 *
 * @module
 */

export {
  /**
   * The engine's ingest as a service: `ingest` (validate, stamp, route, commit to the outbox), `authenticate`, the
   * `outcomes` stream and `storeStatus`.
   */
  Relay,
  /** The admin API's keys (create, list, authenticate, revoke) and its audit log. */
  RelayAccess,
  /** Deletion requests (`deleteUser`, `getDeletion`), audience and computed-trait syncs (`syncAudience`, `syncComputedTrait`). */
  RelayAudiences,
  /** A source's destinations one at a time: list, put, delete (pending jobs dead-lettered), rotate a secret. */
  RelayDestinations,
  /** Endpoint URLs: health, enabling and disabling, bulk replay and purge of their dead letters. */
  RelayEndpoints,
  /** Message and dead-letter look-ups, a dead letter's replay, the backlog and usage counters. */
  RelayMessages,
  /** Source management: put, get, list, delete, and the rotation of a source's signing secret. */
  RelaySources
} from "./relay/Relay.js"
export type {
  /** One URL's health (`RelayEndpoints.endpointHealth`): state, failures, last success and failure, hour and day. */
  EndpointHealth,
  /** Options of `Relay.ingest`: a fixed type, batch-level defaults and `sentAt`. */
  IngestOptions,
  /** What `Relay.ingest` committed: accepted, duplicates, jobs created and the message ids. */
  IngestResult,
  /** Which dead letters `RelayEndpoints.replayDeadLetters` / `purgeDeadLetters` take, and whether only to count them. */
  RecoveryRequest,
  /** How many dead letters a bulk replay or purge took (or would take). */
  RecoveryResult,
  /** The operations of the `RelayAccess` service. */
  RelayAccessShape,
  /** The operations of the `RelayAudiences` service. */
  RelayAudiencesShape,
  /** The operations of the `RelayDestinations` service. */
  RelayDestinationsShape,
  /** The operations of the `RelayEndpoints` service. */
  RelayEndpointsShape,
  /** The operations of the `RelayMessages` service. */
  RelayMessagesShape,
  /** Every service of the engine, as `layerSqlite` / `layerPg` / `layerEngine` provide them. */
  RelayServices,
  /** The operations of the `Relay` service. */
  RelayShape,
  /** The operations of the `RelaySources` service. */
  RelaySourcesShape,
  /** What `RelaySources.rotateSecret` made: the new `whsec_` secret (in full, once) and the source as saved. */
  RotatedSecret,
  /** A destination as `RelayDestinations.putDestination` saved it: created or replaced, and any secret it generated. */
  SavedDestination,
  /** A source as `RelaySources.putSource` saved it, with the Standard Webhooks secret it generated, if any. */
  SavedSource
} from "./relay/Relay.js"

export {
  /** The engine (Relay, dispatcher, retention) over any store layer (one providing every service of `StoreServices`). */
  layerEngine,
  /** The engine on PostgreSQL; several processes may share one database. */
  layerPg,
  /** The engine on an embedded SQLite file, the default. Fails with `StoreError` when the file cannot be opened. */
  layerSqlite
} from "./relay/RelayLayer.js"
export type {
  /** Dispatcher, transport and retention options of the engine layers. */
  EngineOptions
} from "./relay/RelayLayer.js"

export {
  /**
   * Delivers one message now, without a store (retries wait in memory). Needs `Transport`:
   * provide `transportLayer()`. Fails with `InvalidMessages` / `MessageTooLarge` or `AllEndpointsFailed`.
   */
  deliverMessage as deliver
} from "./relay/DeliverOnce.js"

export {
  /** The dispatcher as a background layer (claims due jobs and delivers them). */
  layer as dispatcherLayer
} from "./delivery/Dispatcher.js"
export type {
  /** Concurrency per endpoint, memory bound, lease and polling of the dispatcher. */
  DispatcherOptions
} from "./delivery/Dispatcher.js"

export {
  /** The outbound HTTP client of deliveries (undici, 5 s deadline, 64 KB body cap, SSRF guard). */
  layer as transportLayer,
  /** The `Transport` service tag, for tests that script receivers. */
  Transport
} from "./delivery/Transport.js"
export type {
  /** Extra certificate authorities, timeout, body limits and `allowPrivateNetworks` of the transport. */
  TransportOptions
} from "./delivery/Transport.js"

export {
  /** Every URL of a job failed permanently or ran out of its 4 h window. */
  AllEndpointsFailed
} from "./delivery/DeliveryResult.js"
export type {
  /** `Delivered` (a URL answered 2xx) or `Deferred` (retry later). */
  DeliveryResult
} from "./delivery/DeliveryResult.js"
export type {
  /** A job that ended: delivered or dead, as the `Relay.outcomes` stream reports it. */
  DeliveryOutcome
} from "./delivery/Outcomes.js"

export {
  /** The source has no destination with this id (HTTP 404); a dead letter of a deleted destination is not replayed. */
  UnknownDestination
} from "./domain/DestinationErrors.js"
export {
  /** Some message of a request is invalid (HTTP 400); each issue names the field and, in a batch, the index. */
  InvalidMessages,
  /** A message's JSON is over 32 KiB (HTTP 413). */
  MessageTooLarge,
  /** A batch holds more than 2 500 messages (HTTP 400). */
  TooManyMessages,
  /** No source has this id or write key (HTTP 401 for write keys). */
  UnknownSource
} from "./domain/IngestErrors.js"
export {
  /**
   * `RelaySources.putSource` refused: an endpoint URL points at a loopback, private or link-local address
   * (each issue names the field); allow them with `EngineOptions.allowPrivateNetworks` or
   * `HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true` (REFERENCE §8).
   */
  BlockedEndpoints
} from "./network/EgressPolicy.js"
export type {
  /** Backlog bound, concurrent ingest commits and admission wait (`EngineOptions.overload`). */
  OverloadOptions
} from "./overload/OverloadConfig.js"
export {
  /** Ingest refused, nothing stored: the backlog is over its bound or the store is too slow (HTTP 503). */
  Overloaded
} from "./overload/Overloaded.js"
export {
  /** A store operation failed; nothing of the call was committed. */
  StoreError,
  /** Another source already uses this write key. */
  WriteKeyConflict
} from "./store/StoreError.js"

export {
  /** Another audience of the source is already sent as this property (HTTP 409). */
  AudiencePropertyTaken,
  /** Another sync of the same audience is running, in this process or another (HTTP 409). */
  AudienceSyncInProgress,
  /** The sync lost its audience lease to another sync; the chunks applied stand: run it again. */
  AudienceSyncInterrupted,
  /** A deletion request or sync input is invalid (HTTP 400); each issue names the field. */
  InvalidAdminRequest,
  /** No deletion request has this id (HTTP 404). */
  UnknownDeletion,
  /** A deletion request names sources that do not exist (HTTP 400). */
  UnknownSources
} from "./audiences/AudienceErrors.js"
export type {
  /** What `RelayAudiences.syncAudience` changed: the property and the added / removed / unchanged counts. */
  AudienceSyncResult
} from "./audiences/AudienceSync.js"
export type {
  /** What `RelayAudiences.syncComputedTrait` changed. */
  TraitSyncResult
} from "./audiences/ComputedTraits.js"
export type {
  /** A recorded deletion request (`RelayAudiences.deleteUser`). */
  DeletionRequest,
  /** A deletion request with each notification's delivery status (`RelayAudiences.getDeletion`). */
  DeletionStatus
} from "./audiences/Deletions.js"
export type {
  /** A computed trait's value: a JSON scalar; `null` clears it. */
  TraitValue
} from "./audiences/Input.js"

export {
  /** The `X-Signature` value: lowercase hex HMAC-SHA1 of the body, keyed by the shared secret. */
  sign
} from "./delivery/Signature.js"
export {
  /** Schema of destination filters (REFERENCE §10): rules `{ if: { type?, event?, properties? }, then: "drop" }`. */
  Filters
} from "./domain/Filters.js"
export {
  /** Schema of a source and its webhook destination (REFERENCE §1), for validating configuration. */
  SourceConfig,
  /** Schema of a webhook destination: enabled, shared secret, 1 to 5 endpoints with static headers. */
  WebhookSettings
} from "./domain/Settings.js"
export {
  /** The `whpk_` public key a source's receivers verify its `v1a` (ed25519) signatures with. */
  signingPublicKey,
  /** Schema of a Standard Webhooks secret: `{ secret: "whsec_…", expiresAt?, id?, createdAt? }`. */
  SigningSecret
} from "./domain/Signing.js"
export {
  /** Every state `MessageLogQuery.statuses` can ask for. */
  logStatuses
} from "./store/MessageLogQuery.js"
export type {
  /** A message's job at one destination as the log lists it: status, attempts so far, the last attempt. */
  LogDestination,
  /** One message of the log: ids, type, event, user and anonymous ids, receipt time, its destinations. */
  LogMessage,
  /** A message's state at a destination (`filtered`: it went to none). */
  LogStatus,
  /** A page of `RelayMessages.listMessages`: the messages, newest first, and the cursor of the next page. */
  MessageLogPage,
  /** What `RelayMessages.listMessages` looks for (REFERENCE §12): filters, a time range, a cursor and a limit. */
  MessageLogQuery
} from "./store/MessageLogQuery.js"
export type {
  /** Jobs by state, as `RelayMessages.backlog` counts them. */
  Backlog,
  /** One job as the look-ups show it: status, attempts so far, next due time, last error. */
  JobSummary,
  /** A job with every attempt made for it (`RelayMessages.messageJobs`). */
  JobWithAttempts,
  /** A message found by `RelayMessages.searchMessages`, with its jobs and their attempts. */
  MessageRecord,
  /** What `RelayMessages.searchMessages` looks for: a user id and/or a source id, and a limit. */
  MessageSearch,
  /** A stored source and its destination settings (`RelaySources.getSource`, `RelaySources.listSources`). */
  StoredSource,
  /** One UTC day of a source's usage counters (`RelayMessages.usage`, REFERENCE §11). */
  UsageDay
} from "./store/Model.js"
