import * as Data from "effect/Data"
import type { SendError } from "./ClientErrors.js"

/**
 * Whether the server can be reached, reported when it changes (`onStatus`, the `status` stream):
 * - `Unreachable`: a request failed with a retryable error (`error`) at `since` (epoch ms). The
 *   client holds what is queued and probes with its oldest batch, one request at a time;
 * - `Reachable`: a probe succeeded; `downtimeMillis` since the outage began, `held` messages were
 *   waiting, and they now go out at the usual `maxInFlight`.
 * Separate from outcomes: each call still ends in exactly one `Outcome`.
 */
export type ClientStatus = Data.TaggedEnum<{
  Unreachable: { readonly error: SendError; readonly since: number }
  Reachable: { readonly downtimeMillis: number; readonly held: number }
}>

/** Constructors and guards for {@link ClientStatus}. */
export const ClientStatus = Data.taggedEnum<ClientStatus>()

/** Message counts: `held` queued or being sent now; running totals of the other three since the client started. */
export interface ClientStats {
  readonly held: number
  readonly delivered: number
  readonly dropped: number
  readonly failed: number
}
