import { HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import { secretsEqual } from "../domain/Secrets.js"
import { bearerToken } from "./Auth.js"
import { errorResponse } from "./ErrorBody.js"

/**
 * Guards an admin handler: without a configured token the admin API does not exist (404, never
 * open); a missing or wrong bearer token is 401. The token is compared in constant time.
 */
export const requireAdmin = (adminToken: Option.Option<Redacted.Redacted>) =>
<E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (Option.isNone(adminToken)) {
      return Effect.succeed(
        errorResponse(404, "admin_disabled", "the admin API is disabled: set HOOKRELAY_ADMIN_TOKEN")
      )
    }
    const given = bearerToken(request.headers.authorization)
    if (given === undefined || !secretsEqual(given, Redacted.value(adminToken.value))) {
      return Effect.succeed(
        errorResponse(401, "unauthorized", "a valid admin token is required (Authorization: Bearer <token>)", [], {
          "www-authenticate": "Bearer"
        })
      )
    }
    return handler
  })
