import { Cause, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { type HttpApiEndpoint, HttpApiMiddleware } from "effect/http-api"
import { issuesFromParseError } from "../domain/Issues.js"
import { secretsEqual } from "../domain/Secrets.js"
import { RelayAccess } from "../relay/Relay.js"
import { keyPrefix } from "../relay/RelayAccess.js"
import { AdminAuthentication } from "./AdminContract.js"
import { QueryDecoding } from "./AdminSchemas.js"
import {
  AdminCaller,
  bootstrapCaller,
  type Caller,
  hasScope,
  RequiredScope,
  seesSource,
  SpansAllSources
} from "./AdminScopes.js"
import { bearerToken } from "./Auth.js"
import { errorResponse } from "./ErrorBody.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

const unauthorized = errorResponse(
  401,
  "unauthorized",
  "a valid admin token or API key is required (Authorization: Bearer <token>)",
  [],
  { "www-authenticate": "Bearer" }
)

const writeMethods = new Set(["POST", "PUT", "DELETE", "PATCH"])

/** `/admin/sources/:sourceId` as OpenAPI writes it: `/admin/sources/{sourceId}`. */
export const routePattern = (endpoint: HttpApiEndpoint.Top): string => endpoint.path.replace(/:(\w+)/g, "{$1}")

/** The caller a bearer token names: the bootstrap token, an unrevoked key, or none. */
const callerOf = (adminToken: Redacted.Redacted, given: string | undefined) =>
  Effect.gen(function*() {
    if (given === undefined) return Option.none<Caller>()
    if (secretsEqual(given, Redacted.value(adminToken))) return Option.some(bootstrapCaller)
    if (!given.startsWith(keyPrefix)) return Option.none<Caller>()
    const access = yield* RelayAccess
    const key = yield* access.authenticateKey(given)
    return Option.map(key, (found): Caller => ({
      keyId: found.id,
      name: found.name,
      scopes: found.scopes,
      sourceIds: found.sourceIds
    }))
  })

/** The source ids a request names in its path or query (`sourceId`). */
const namedSources = Effect.gen(function*() {
  const params = yield* HttpRouter.params
  const query = yield* HttpServerRequest.ParsedSearchParams
  const inQuery = query.sourceId
  return [
    ...(params.sourceId === undefined ? [] : [params.sourceId]),
    ...(inQuery === undefined ? [] : typeof inQuery === "string" ? [inQuery] : inQuery)
  ].filter((id) => id !== "")
})

/**
 * What a caller may not do here, as the answer refusing it: a route needs a scope the key lacks (403), a key limited to
 * sources is refused routes over every source (403) and sees no other source (404, as if it did not exist).
 */
const refusal = (caller: Caller, endpoint: HttpApiEndpoint.Top) =>
  Effect.gen(function*() {
    const scope = Context.getOrElse(endpoint.annotations, RequiredScope, () => "admin" as const)
    const route = `${endpoint.method} ${routePattern(endpoint)}`
    if (!hasScope(caller, scope)) {
      return Option.some(errorResponse(403, "forbidden", `${route} needs scope ${scope}; this key lacks it`, [
        { path: "scopes", message: `needs ${scope}` }
      ]))
    }
    if (caller.sourceIds === null) return Option.none()
    if (Context.getOrElse(endpoint.annotations, SpansAllSources, () => false)) {
      return Option.some(
        errorResponse(403, "forbidden", `${route} spans every source: it needs a key without source limits`, [
          { path: "sourceIds", message: "must not be limited" }
        ])
      )
    }
    const hidden = (yield* namedSources).some((sourceId) => !seesSource(caller, sourceId))
    return hidden ? Option.some(errorResponse(404, "not_found", "no such source")) : Option.none()
  })

const statusOf = (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>): number =>
  Exit.isSuccess(exit) ? exit.value.status : Cause.hasInterruptsOnly(exit.cause) ? 499 : 500

/** One admin write in the audit log: who, which route, on what, and its status. Never a body (answers hold secrets). */
const audit = (caller: Caller, endpoint: HttpApiEndpoint.Top, status: number) =>
  Effect.gen(function*() {
    const access = yield* RelayAccess
    const request = yield* HttpServerRequest.HttpServerRequest
    const params = yield* HttpRouter.params
    yield* access.recordAudit({
      keyId: caller.keyId,
      keyName: caller.name,
      method: request.method,
      route: routePattern(endpoint),
      path: request.url.split("?")[0]!,
      sourceId: params.sourceId ?? null,
      destinationId: params.destinationId ?? null,
      address: Option.getOrNull(request.remoteAddress),
      status
    })
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("admin write not recorded in the audit log", cause)))

/**
 * The admin API's bearer check, for every route of the contract (REFERENCE §7c): without a configured token the admin
 * API does not exist (404, never open); the bootstrap token (compared in constant time) has scope `admin`; any other
 * token must be an unrevoked `hrk_` key. Then the route's scope and the key's sources, then the handler, with every
 * write of a known caller recorded in the audit log.
 */
export const adminAuthentication = (adminToken: Option.Option<Redacted.Redacted>) =>
  Layer.succeed(AdminAuthentication)({
    bearer: (handler, { endpoint }) =>
      Effect.gen(function*() {
        if (Option.isNone(adminToken)) {
          return errorResponse(404, "admin_disabled", "the admin API is disabled: set HOOKRELAY_ADMIN_TOKEN")
        }
        const request = yield* HttpServerRequest.HttpServerRequest
        const found = yield* Effect.result(callerOf(adminToken.value, bearerToken(request.headers.authorization)))
        if (found._tag === "Failure") return yield* storeUnavailableResponse("API key look-up failed", found.failure)
        if (Option.isNone(found.success)) return unauthorized
        const caller = found.success.value
        const recorded = writeMethods.has(request.method)
          ? (status: number) => audit(caller, endpoint, status)
          : undefined
        const refused = yield* refusal(caller, endpoint)
        if (Option.isSome(refused)) {
          if (recorded !== undefined) yield* recorded(refused.value.status)
          return refused.value
        }
        const served = Effect.provideService(handler, AdminCaller, caller)
        return yield* recorded === undefined
          ? served
          : Effect.onExit(served, (exit) => recorded(statusOf(exit)))
      })
  })

/** A query that does not decode is `400 invalid_request` naming the parameter, as the handlers' own checks answer. */
export const queryDecoding = HttpApiMiddleware.layerSchemaErrorTransform(QueryDecoding, (error) => {
  const issues = issuesFromParseError(error.cause)
  return Effect.succeed(
    errorResponse(400, "invalid_request", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)
  )
})
