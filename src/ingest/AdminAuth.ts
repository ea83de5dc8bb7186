import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { issuesFromParseError } from "../domain/Issues.js"
import { secretsEqual } from "../domain/Secrets.js"
import { AdminAuthentication } from "./AdminContract.js"
import { QueryDecoding } from "./AdminSchemas.js"
import { bearerToken } from "./Auth.js"
import { errorResponse } from "./ErrorBody.js"

/**
 * The admin API's bearer check, for every route of the contract: without a configured token the admin API does not
 * exist (404, never open); a missing or wrong bearer token is 401. The token is compared in constant time. The header
 * is read as `bearerToken` reads every hookrelay token, whatever credential the contract's scheme parsed.
 */
export const adminAuthentication = (adminToken: Option.Option<Redacted.Redacted>) =>
  Layer.succeed(AdminAuthentication)({
    bearer: (handler) =>
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
  })

/** A query that does not decode is `400 invalid_request` naming the parameter, as the handlers' own checks answer. */
export const queryDecoding = HttpApiMiddleware.layerSchemaErrorTransform(QueryDecoding, (error) => {
  const issues = issuesFromParseError(error.cause)
  return Effect.succeed(
    errorResponse(400, "invalid_request", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)
  )
})
