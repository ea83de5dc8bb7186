import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { AliasParams, GroupParams, IdentifyParams, PageParams, ScreenParams, TrackParams } from "./Calls.js"
import type { CallError, ClientClosed } from "./ClientErrors.js"
import type { Outcome } from "./Outcome.js"
import type { ClientStats, ClientStatus } from "./Status.js"

/**
 * The client library's Effect API (REFERENCE §9). A refused call fails with a typed `CallError`
 * (never a defect) and is also reported as a `Refused` outcome (`onOutcome`, `outcomes`), so
 * that a forked, unobserved call is still seen.
 */
export interface AnalyticsShape {
  /** Records who the user is and their traits. */
  readonly identify: (params: IdentifyParams) => Effect.Effect<void, CallError>
  /** Records an action of the user (`event`). */
  readonly track: (params: TrackParams) => Effect.Effect<void, CallError>
  /** Records a web page view; the page's fields go in `properties` (or `traits`, the same thing). */
  readonly page: (params: PageParams) => Effect.Effect<void, CallError>
  /** Records a mobile screen view. */
  readonly screen: (params: ScreenParams) => Effect.Effect<void, CallError>
  /** Records that the user belongs to a group. */
  readonly group: (params: GroupParams) => Effect.Effect<void, CallError>
  /** Records that `previousId` and `userId` are one user. */
  readonly alias: (params: AliasParams) => Effect.Effect<void, CallError>
  /** Sends what is queued now and completes when every message queued before it has its outcome. */
  readonly flush: Effect.Effect<void, ClientClosed>
  /**
   * Every outcome from the moment the stream is run: batches sent or failed, messages dropped,
   * calls refused. It ends when the client is closed. A subscriber more than `outcomeBuffer`
   * (4 096) outcomes behind loses the oldest; the `onOutcome` option sees every one.
   */
  readonly outcomes: Stream.Stream<Outcome>
  /** Like `outcomes`, but subscribed as soon as this effect runs (in the given scope), so nothing after it is missed. */
  readonly subscribe: Effect.Effect<Stream.Stream<Outcome>, never, Scope.Scope>
  /**
   * The server's reachability as it changes, from the moment the stream is run: `Unreachable`
   * when an outage starts, `Reachable` when it ends. It ends when the client is closed.
   */
  readonly status: Stream.Stream<ClientStatus>
  /** Messages held now, and the running totals delivered, dropped and failed. */
  readonly stats: Effect.Effect<ClientStats>
}
