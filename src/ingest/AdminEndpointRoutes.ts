import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either } from "effect"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { decodeWithIssues } from "../domain/Issues.js"
import type { EndpointHealth, StoreError } from "../relay/Relay.js"
import { Relay } from "../relay/Relay.js"
import { readAdminJson } from "./AdminBody.js"
import * as E from "./AdminEndpointSchemas.js"
import { errorResponse } from "./ErrorBody.js"

type Failure = UnknownSource | InvalidAdminRequest | StoreError
type Route = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest>

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
  Effect.map(readAdminJson, Either.flatMap((parsed) => Either.mapLeft(decode(parsed), invalid)))

const decodeUrl = decodeWithIssues(E.EndpointUrl)
const decodeRecovery = decodeWithIssues(E.RecoveryInput)

const time = (value: number | string | undefined) =>
  value === undefined ? undefined : typeof value === "number" ? value : Date.parse(value)

const recovery = (action: "replay" | "purge") =>
  Effect.gen(function*() {
    const relay = yield* Relay
    const input = yield* body(decodeRecovery)
    if (Either.isLeft(input)) return input.left
    const request = {
      sourceId: input.right.sourceId,
      url: input.right.url,
      since: time(input.right.since),
      until: time(input.right.until),
      dryRun: input.right.dryRun ?? false
    }
    const result = action === "replay"
      ? yield* relay.replayDeadLetters(request)
      : yield* relay.purgeDeadLetters(request)
    return HttpServerResponse.unsafeJson(result satisfies typeof E.RecoveryView.Type)
  })

const change = (state: "enabled" | "disabled") =>
  Effect.gen(function*() {
    const relay = yield* Relay
    const input = yield* body(decodeUrl)
    if (Either.isLeft(input)) return input.left
    const { url } = input.right
    const changed = state === "enabled"
      ? yield* relay.enableEndpoint(url)
      : yield* Effect.as(relay.disableEndpoint(url, input.right.reason ?? "disabled by an operator"), true)
    return HttpServerResponse.unsafeJson({ url, state, changed } satisfies typeof E.EndpointChanged.Type)
  })

const listEndpoints = Effect.gen(function*() {
  const relay = yield* Relay
  const params = yield* HttpServerRequest.ParsedSearchParams
  const sourceId = typeof params.sourceId === "string" ? params.sourceId : ""
  if (sourceId === "") return invalid([{ path: "sourceId", message: "is required" }])
  const endpoints = yield* relay.endpointHealth(sourceId)
  return HttpServerResponse.unsafeJson({ endpoints: endpoints.map(endpointView) } satisfies typeof E.EndpointList.Type)
})

/** The endpoint and bulk-recovery routes of the admin API (`AdminEndpointSchemas` describes them). */
export const endpointRoutes = (route: Route) => <E, R>(router: HttpRouter.HttpRouter<E, R>) =>
  router.pipe(
    HttpRouter.get("/admin/endpoints", route(listEndpoints)),
    HttpRouter.post("/admin/endpoints/enable", route(change("enabled"))),
    HttpRouter.post("/admin/endpoints/disable", route(change("disabled"))),
    HttpRouter.post("/admin/dead-letters/replay", route(recovery("replay"))),
    HttpRouter.post("/admin/dead-letters/purge", route(recovery("purge")))
  )
