import * as Data from "effect/Data"
import type { JsonObject, Message, MessageType } from "../domain/Message.js"
import type { CallError, SendError } from "./ClientErrors.js"

/** A message as the client sends it: validated, with its `messageId`, `timestamp` and `context.library`. */
export type OutgoingMessage = Message & {
  readonly messageId: string
  readonly timestamp: string
  readonly context: JsonObject
}

/** Why messages could not be delivered (see `Outcome.Failure`). */
export type FailureReason = "Rejected" | "RetriesExhausted" | "RetryForElapsed" | "Closed"

/**
 * What became of calls. Every call ends in exactly one outcome:
 * - `Success`: its batch was answered 2xx (`attempts` tries in all);
 * - `Failure`: it could not be delivered, and `reason` says why: `Rejected` (a non-retryable
 *   answer), `RetriesExhausted` (`maxRetries` attempts while the server was reachable),
 *   `RetryForElapsed` (it waited longer than `retryFor` since it was queued) or `Closed` (`close`
 *   timed out before it was sent). `error` is the last error seen and `status` its HTTP status
 *   when there was one;
 * - `Dropped`: the queue was full (`overflow: "drop"`), so the message was never queued. A drop is
 *   not an error of the call; it is reported here only;
 * - `Refused`: the call was refused (`InvalidMessage` naming the field, `MessageTooLarge`,
 *   `ClientClosed`) and nothing was queued. The call failed too (its Promise rejected, its Effect
 *   failed); this is where a caller that did not wait for the call sees it.
 */
export type Outcome = Data.TaggedEnum<{
  Success: { readonly messages: ReadonlyArray<OutgoingMessage>; readonly attempts: number }
  Failure: {
    readonly messages: ReadonlyArray<OutgoingMessage>
    readonly attempts: number
    readonly error: SendError
    readonly status: number | undefined
    readonly reason: FailureReason
  }
  Dropped: { readonly message: OutgoingMessage }
  Refused: { readonly type: MessageType; readonly error: CallError }
}>

/** Constructors, guards (`Outcome.$is("Failure")`) and matching (`Outcome.$match`) for {@link Outcome}. */
export const Outcome = Data.taggedEnum<Outcome>()

/**
 * Calls `onOutcome` (when given) with `outcome`. It must not throw; if it does, the exception is
 * returned (to be logged under `DEBUG=analytics`) instead of reaching the caller of the client.
 */
export const notifyOutcome = (
  onOutcome: ((outcome: Outcome) => void) | undefined,
  outcome: Outcome
): unknown => {
  if (onOutcome === undefined) return undefined
  try {
    onOutcome(outcome)
    return undefined
  } catch (error) {
    return error ?? "an exception"
  }
}
