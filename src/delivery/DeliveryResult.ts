import { Data } from "effect"
import type { AttemptOutcome } from "./AttemptOutcome.js"

/**
 * Where one URL of a job stands when the job stops without a success. The dispatcher stores these and passes them
 * back to `deliver` to resume the job (after a deferral or a restart).
 *
 * - `Pending`: more attempts are due; the next one not before `nextAttemptAt` (epoch ms; `0` = as soon as possible).
 * - `Retired`: no more attempts on this URL: a permanent failure, or its next attempt would have started after the
 *   window (first attempt + 4 h).
 *
 * `attempts` counts every attempt made on the URL, across runs; `lastOutcome` is the last one's, when known.
 */
export type EndpointState = Data.TaggedEnum<{
  Pending: {
    readonly url: string
    readonly attempts: number
    readonly nextAttemptAt: number
    readonly lastOutcome?: AttemptOutcome
  }
  Retired: {
    readonly url: string
    readonly attempts: number
    readonly why: "permanent" | "out-of-window"
    readonly lastOutcome?: AttemptOutcome
  }
}>

export const EndpointState = Data.taggedEnum<EndpointState>()

export type Pending = Data.TaggedEnum.Value<EndpointState, "Pending">
export type Retired = Data.TaggedEnum.Value<EndpointState, "Retired">

/**
 * How a job ended without failing:
 * - `Delivered`: `url` answered 2xx (`attempts` made on it in all); the other URLs were stopped.
 * - `Deferred`: no URL succeeded yet, and the next attempt is further away than `maxInlineDelay`: put the job back in
 *   the store until `nextAttemptAt` (the earliest of the pending URLs) with `endpoints`, and keep `firstAttemptAt`.
 */
export type DeliveryResult = Data.TaggedEnum<{
  Delivered: { readonly url: string; readonly status: number; readonly attempts: number }
  Deferred: {
    readonly nextAttemptAt: number
    readonly firstAttemptAt: number
    readonly endpoints: ReadonlyArray<EndpointState>
  }
}>

export const DeliveryResult = Data.taggedEnum<DeliveryResult>()

export type Delivered = Data.TaggedEnum.Value<DeliveryResult, "Delivered">
export type Deferred = Data.TaggedEnum.Value<DeliveryResult, "Deferred">

/** Every URL failed permanently or ran out of window: the job is dead-lettered (REFERENCE §4). In settings order. */
export class AllEndpointsFailed extends Data.TaggedError("AllEndpointsFailed")<{
  readonly jobId: string
  readonly messageId: string
  readonly firstAttemptAt: number
  readonly endpoints: ReadonlyArray<Retired>
}> {
  override get message(): string {
    const each = this.endpoints.map((endpoint) =>
      `${endpoint.url}: ${endpoint.why} after ${endpoint.attempts} attempt(s)` +
      (endpoint.lastOutcome === undefined || endpoint.lastOutcome._tag === "Success"
        ? ""
        : ` (${endpoint.lastOutcome.reason})`)
    )
    return `message ${this.messageId}: every endpoint failed: ${each.join("; ")}`
  }
}
