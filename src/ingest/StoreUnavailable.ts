import { Effect } from "effect"
import type { HttpServerResponse } from "effect/http"
import { isStoreUnavailable, type StoreError } from "../relay/Relay.js"
import { errorResponse } from "./ErrorBody.js"

/** How long a client is asked to wait before it tries again while the store cannot answer. */
export const storeRetryAfterSeconds = 5

/**
 * The answer of every endpoint whose store call failed: `503 store_unavailable` with `Retry-After`, never a 4xx (a
 * client such as analytics-node drops what a 4xx refused). An outage is logged once by `StoreHealth`; any other
 * store error is logged here with `context`.
 */
export const storeUnavailableResponse = (
  context: string,
  error: StoreError,
  message = "the store is unavailable"
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.as(
    isStoreUnavailable(error) ? Effect.void : Effect.logError(context, error),
    errorResponse(503, "store_unavailable", message, [], { "retry-after": String(storeRetryAfterSeconds) })
  )
