import { Effect } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { InvalidMessages, MessageTooLarge, TooManyMessages, UnknownSource } from "../domain/IngestErrors.js"
import type { Overloaded } from "../relay/Relay.js"
import type { StoreError } from "../relay/Relay.js"
import { errorResponse } from "./ErrorBody.js"
import type { PayloadTooLarge, UnreadableBody, UnsupportedEncoding } from "./RequestBody.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

type IngestFailure =
  | InvalidMessages
  | MessageTooLarge
  | TooManyMessages
  | UnknownSource
  | PayloadTooLarge
  | UnreadableBody
  | UnsupportedEncoding
  | Overloaded
  | StoreError

/** Maps every way an ingest request can fail to its JSON answer; nothing was stored in any of them. */
export const ingestFailureResponse = (
  failure: IngestFailure
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  switch (failure._tag) {
    case "InvalidMessages":
      return Effect.succeed(errorResponse(400, "invalid_message", failure.message, failure.errors))
    case "MessageTooLarge":
      return Effect.succeed(
        errorResponse(413, "message_too_large", failure.message, [
          { ...(failure.index !== undefined && { index: failure.index }), path: "", message: failure.message }
        ])
      )
    case "TooManyMessages":
      return Effect.succeed(
        errorResponse(400, "too_many_messages", failure.message, [{ path: "batch", message: failure.message }])
      )
    case "UnknownSource":
      return Effect.succeed(
        errorResponse(401, "unauthorized", "unknown write key", [{
          path: "writeKey",
          message: "is not a known write key"
        }])
      )
    case "PayloadTooLarge":
      return Effect.succeed(
        errorResponse(413, "payload_too_large", `the request body is over ${failure.limit} bytes`, [
          { path: "", message: `is over ${failure.limit} bytes (decoded)` }
        ])
      )
    case "UnreadableBody":
      return Effect.succeed(errorResponse(400, "invalid_body", failure.reason, [{ path: "", message: failure.reason }]))
    case "UnsupportedEncoding":
      return Effect.succeed(
        errorResponse(415, "unsupported_encoding", `Content-Encoding ${failure.encoding} is not supported`, [
          { path: "Content-Encoding", message: "must be gzip, deflate or identity" }
        ])
      )
    case "Overloaded":
      return Effect.succeed(
        errorResponse(503, "overloaded", failure.message, [], {
          "retry-after": String(failure.retryAfterSeconds)
        })
      )
    case "StoreError":
      return storeUnavailableResponse(
        "ingest could not commit to the store",
        failure,
        "the message store is unavailable; nothing was stored"
      )
  }
}
