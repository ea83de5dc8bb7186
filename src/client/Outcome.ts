import * as Data from "effect/Data"
import type { JsonObject, Message } from "../domain/Message.js"
import type { SendError } from "./ClientErrors.js"

/** A message as the client sends it: validated, with its `messageId`, `timestamp` and `context.library`. */
export type OutgoingMessage = Message & {
  readonly messageId: string
  readonly timestamp: string
  readonly context: JsonObject
}

/**
 * What became of queued messages. Every accepted message ends in exactly one outcome:
 * - `Success`: its batch was answered 2xx (`attempts` tries in all);
 * - `Failure`: its batch failed for good — a non-retryable answer, or retries exhausted; `error`
 *   is the last attempt's error and `status` its HTTP status when there was one;
 * - `Dropped`: the queue was full (`overflow: "drop"`), so the message was never queued. A drop is
 *   not an error of the call; it is reported here only.
 */
export type Outcome = Data.TaggedEnum<{
  Success: { readonly messages: ReadonlyArray<OutgoingMessage>; readonly attempts: number }
  Failure: {
    readonly messages: ReadonlyArray<OutgoingMessage>
    readonly attempts: number
    readonly error: SendError
    readonly status: number | undefined
  }
  Dropped: { readonly message: OutgoingMessage }
}>

/** Constructors, guards (`Outcome.$is("Failure")`) and matching (`Outcome.$match`) for {@link Outcome}. */
export const Outcome = Data.taggedEnum<Outcome>()
