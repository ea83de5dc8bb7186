/**
 * `hookrelay/client`: send analytics messages to a hookrelay server (or anything that speaks
 * Segment's `/v1/batch`) from Node.
 *
 * Two APIs over one engine:
 * - Effect programs use the {@link Analytics} service, built by {@link layer} (options in code)
 *   or {@link layerConfig} (options from the environment);
 * - plain Node code uses {@link createClient}, whose calls return Promises.
 *
 * Every call is validated with the server's own message schemas, stamped (`messageId`,
 * `timestamp`, `context.library`) and queued; it never waits for the network. A batcher sends
 * the queue in batches of `flushAt` messages, every `flushAfter`, and never over 500 KB per
 * request, with at most `maxInFlight` requests at a time. A retryable failure (5xx, 408, 429,
 * timeouts, network errors) is an outage of the client's: it holds the queue and probes the
 * server with its oldest batch, one request at a time, until it answers; messages wait up to
 * `retryFor` (10 minutes) and the queue is bounded by count and bytes. Each batch's outcome
 * is reported (`outcomes` stream, `onOutcome` callback). Closing flushes what is queued and
 * waits for it. `DEBUG=analytics` logs queueing, flushes and failures; otherwise the library is
 * silent.
 *
 * The order of calls is the contract: every call made before `flush()` or `close()` — awaited
 * or not — is part of what it sends and waits for; only calls after `close()` are refused. The
 * client never crashes its host: a refused call (`InvalidMessage` naming the field,
 * `MessageTooLarge`, `ClientClosed`) rejects its Promise (or fails its Effect with a typed error)
 * for a caller who waits for it, never becomes an unhandled rejection, and is reported to
 * `onOutcome` as a `Refused` outcome — where fire-and-forget callers see it.
 *
 * @example
 * ```ts
 * import { createClient } from "hookrelay/client"
 *
 * const analytics = createClient({
 *   writeKey: process.env.HOOKRELAY_WRITE_KEY!,
 *   endpoint: "https://relay.example.com",
 *   onOutcome: (outcome) => {
 *     if (outcome._tag === "Refused") console.error(outcome.error.message)
 *   }
 * })
 * analytics.track({ userId: "u-1", event: "Order Completed", properties: { total: 42 } }) // no need to await
 * await analytics.close() // sends it first
 * ```
 *
 * @example
 * ```ts
 * import { NodeRuntime } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Analytics, layerConfig } from "hookrelay/client"
 *
 * const program = Effect.gen(function*() {
 *   const analytics = yield* Analytics
 *   yield* analytics.identify({ userId: "u-1", traits: { plan: "pro" } })
 * })
 * // Closing the layer at the end of the program sends what is queued.
 * program.pipe(Effect.provide(layerConfig()), NodeRuntime.runMain)
 * ```
 *
 * @module
 */

export {
  /** The client library's Effect service: `yield* Analytics` gives the calls, `flush` and the outcome streams. */
  Analytics,
  /** The methods of the {@link Analytics} service. */
  type AnalyticsShape,
  /** Why a call was refused: `InvalidMessage`, `MessageTooLarge` or `ClientClosed` (also reported as a `Refused` outcome). */
  type CallError,
  /** The service over the node:http transport, from options given in code. Fails with `InvalidOptions`. */
  layer,
  /** The service from environment variables through `Config` (`HOOKRELAY_WRITE_KEY`, …; see `environmentVariables`). */
  layerConfig,
  /** The service over a `Transport` you provide (tests, or your own HTTP stack). */
  layerWithoutTransport,
  /** The service as a scoped effect needing a `Transport`, for building your own layer. */
  make
} from "./Analytics.js"

export {
  /** How far (in outcomes) an `outcomes` subscriber may fall behind before the oldest are discarded. */
  outcomeBuffer
} from "./ClientEngine.js"

export {
  /** The Promise client's methods. */
  type Client,
  /** Options of the Promise client's `close`. */
  type CloseOptions,
  /** The Promise client for plain Node code; throws `InvalidOptions` at once on bad options. */
  createClient
} from "./Client.js"

export type {
  /** Fields of an `alias` call. */
  AliasParams,
  /** Fields every call may carry: `context`, `integrations`, `timestamp`, `messageId`. */
  CommonParams,
  /** A JSON object (`properties`, `traits`, `context`, `integrations`). */
  Fields,
  /** Fields of a `group` call. */
  GroupParams,
  /** A user, group or alias id: a string, or a number (sent as its string). */
  Id,
  /** Fields of an `identify` call. */
  IdentifyParams,
  /** `userId`, `anonymousId`, or both. */
  Identity,
  /** Fields of a `page` call (`traits` is another name for its `properties`). */
  PageParams,
  /** Standard page properties (`url`, `title`, `referrer`, `path`) and your own. */
  PageProperties,
  /** Fields of a `screen` call. */
  ScreenParams,
  /** Fields of a `track` call. */
  TrackParams
} from "./Calls.js"

export {
  /** The client was closed; it accepts no more calls. */
  ClientClosed,
  /** The server answered with a non-2xx status (5xx and 429 are retried). */
  HttpError,
  /** A call's fields break a rule of the tracking API; `path` names the field. Nothing was queued. */
  InvalidMessage,
  /** The options were refused; `issues` names each option. */
  InvalidOptions,
  /** A message's JSON is over 32 KiB; `path` names its largest field. Nothing was queued. */
  MessageTooLarge,
  /** A request got no answer within `timeout`. Retried. */
  RequestTimeout,
  /** Why one attempt at sending a batch failed. */
  type SendError,
  /** A request failed on the network (refused, reset, DNS, TLS). Retried unless the certificate is invalid. */
  TransportError
} from "./ClientErrors.js"

export {
  /** The client's options; only `writeKey` is required. */
  type AnalyticsOptions,
  /** The defaults of the options (REFERENCE §9). */
  defaults,
  /** Which message goes when the queue is full and `overflow` is `"drop"`: `"oldest"` or `"newest"`. */
  type DropPolicy,
  /** The environment variable read by `layerConfig` for each option. */
  environmentVariables,
  /** The options read from the environment, as a `Config`. */
  optionsConfig,
  /** `"drop"` (report and drop when the queue is full) or `"backpressure"` (wait for room). */
  type Overflow
} from "./Options.js"

export {
  /** Message counts: held now, delivered, dropped and failed so far. */
  type ClientStats,
  /** The server's reachability as the client sees it: `Unreachable` during an outage, `Reachable` after. */
  ClientStatus
} from "./Status.js"

export {
  /** Why messages failed: `Rejected`, `RetriesExhausted`, `RetryForElapsed` or `Closed`. */
  type FailureReason,
  /** What became of calls: `Success`, `Failure` (with the batch's messages), `Dropped` or `Refused`. */
  Outcome,
  /** A message as sent: validated and stamped. */
  type OutgoingMessage
} from "./Outcome.js"

export {
  /** During an outage, the first probe's delay (then doubled, jittered). */
  initialBackoff,
  /** The longest delay between probes. */
  maxBackoff,
  /** The longest `Retry-After` honoured. */
  maxRetryAfter
} from "./ClientRetry.js"

export {
  /** Options of the node:http transport. */
  type HttpTransportOptions,
  /** The node:http transport as a layer (what `layer` uses). */
  layerNodeHttp,
  /** How batches reach the server; provide your own layer to replace HTTP. */
  Transport,
  /** One POST of a batch. */
  type TransportRequest,
  /** The answer to one POST. */
  type TransportResponse,
  /** The transport's single operation. */
  type TransportShape
} from "./ClientTransport.js"

export {
  /** `context.library` of every message: `{ name: "hookrelay", version }`. */
  library,
  /** The client's version. */
  version
} from "./version.js"
