import { Effect, Result } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../domain/DestinationErrors.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { decodeWithIssues } from "../domain/Issues.js"
import type { EndpointHealth, StoreError } from "../relay/Relay.js"
import { RelayEndpoints } from "../relay/Relay.js"
import { readAdminJson } from "./AdminBody.js"
import { AdminContract } from "./AdminContract.js"
import * as E from "./AdminEndpointSchemas.js"
import { callerSources, noSuchSource, sees } from "./AdminSourceLimits.js"
import { errorResponse } from "./ErrorBody.js"

type Failure = UnknownSource | UnknownDestination | InvalidAdminRequest | StoreError
type Handled = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>
) => () => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>

const iso = (ms: number | null) => ms === null ? null : new Date(ms).toISOString()

const endpointView = (health: EndpointHealth): typeof E.EndpointView.Type => ({
  ...health,
  lastSuccessAt: iso(health.lastSuccessAt),
  lastFailure: health.lastFailure === null
    ? null
    : { at: iso(health.lastFailure.at), reason: health.lastFailure.reason },
  nextProbeAt: iso(health.nextProbeAt)
})

const invalid = (issues: ReadonlyArray<{ readonly path: string; readonly message: string }>) =>
  errorResponse(400, "invalid_request", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)

/** The JSON body decoded by `schema`, or the 413 or 400 answer (naming the field). */
const body = <A, I>(decode: ReturnType<typeof decodeWithIssues<A, I>>) =>
  Effect.map(readAdminJson, Result.flatMap((parsed) => Result.mapError(decode(parsed), invalid)))

const decodeUrl = decodeWithIssues(E.EndpointUrl)
const decodeRecovery = decodeWithIssues(E.RecoveryInput)

const time = (value: number | string | undefined) =>
  value === undefined ? undefined : typeof value === "number" ? value : Date.parse(value)

const recovery = (action: "replay" | "purge") =>
  Effect.gen(function*() {
    const relayEndpoints = yield* RelayEndpoints
    const input = yield* body(decodeRecovery)
    if (Result.isFailure(input)) return input.failure
    if (!(yield* sees(input.success.sourceId))) return noSuchSource
    const request = {
      sourceId: input.success.sourceId,
      url: input.success.url,
      since: time(input.success.since),
      until: time(input.success.until),
      dryRun: input.success.dryRun ?? false
    }
    const result = action === "replay"
      ? yield* relayEndpoints.replayDeadLetters(request)
      : yield* relayEndpoints.purgeDeadLetters(request)
    return HttpServerResponse.jsonUnsafe(result satisfies typeof E.RecoveryView.Type)
  })

const change = (state: "enabled" | "disabled") =>
  Effect.gen(function*() {
    const relayEndpoints = yield* RelayEndpoints
    const input = yield* body(decodeUrl)
    if (Result.isFailure(input)) return input.failure
    const { destinationId, sourceId, url } = input.success
    // A URL alone reaches every source's endpoints: a key limited to sources names its source.
    if (sourceId === undefined && (yield* callerSources) !== null) {
      return invalid([{ path: "sourceId", message: "is required for a key limited to sources" }])
    }
    if (sourceId !== undefined && !(yield* sees(sourceId))) return noSuchSource
    const selector = { url, sourceId, destinationId }
    const changed = state === "enabled"
      ? yield* relayEndpoints.enableEndpoint(selector)
      : yield* relayEndpoints.disableEndpoint(selector, input.success.reason ?? "disabled by an operator")
    return HttpServerResponse.jsonUnsafe(
      {
        url,
        state,
        changed: changed.length > 0,
        endpoints: changed.map((key) => ({ sourceId: key.sourceId, destinationId: key.destinationId, url: key.url }))
      } satisfies typeof E.EndpointChanged.Type
    )
  })

const listEndpoints = Effect.gen(function*() {
  const relayEndpoints = yield* RelayEndpoints
  const params = yield* HttpServerRequest.ParsedSearchParams
  const sourceId = typeof params.sourceId === "string" ? params.sourceId : ""
  if (sourceId === "") return invalid([{ path: "sourceId", message: "is required" }])
  const destinationId = typeof params.destinationId === "string" && params.destinationId !== ""
    ? params.destinationId
    : undefined
  const endpoints = yield* relayEndpoints.endpointHealth(sourceId, destinationId)
  return HttpServerResponse.jsonUnsafe({ endpoints: endpoints.map(endpointView) } satisfies typeof E.EndpointList.Type)
})

/**
 * The endpoint and bulk-recovery routes of the admin API (`AdminEndpointSchemas` describes them). Raw: the bodies are
 * read within the admin limit and decoded here, every failing field named.
 */
export const endpointHandlers = (handled: Handled) =>
  HttpApiBuilder.group(AdminContract, "endpoints", (handlers) =>
    handlers
      .handleRaw("listEndpoints", handled(listEndpoints))
      .handleRaw("enableEndpoint", handled(change("enabled")))
      .handleRaw("disableEndpoint", handled(change("disabled")))
      .handleRaw("replayDeadLetters", handled(recovery("replay")))
      .handleRaw("purgeDeadLetters", handled(recovery("purge"))))
