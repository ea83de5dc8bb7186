import { type Duration, Effect, Layer, Option, type Redacted, Result, Schema } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../domain/DestinationErrors.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { decodeWithIssues } from "../domain/Issues.js"
import { SourceConfig } from "../domain/Settings.js"
import { version } from "../domain/Version.js"
import type { BlockedEndpoints } from "../network/EgressPolicy.js"
import { defaultSearchLimit, defaultUsageDays, RelayAccess, RelayMessages, RelaySources } from "../relay/Relay.js"
import type { StoreError, WriteKeyConflict } from "../relay/Relay.js"
import { adminAuthentication, queryDecoding } from "./AdminAuth.js"
import { readAdminJson, readRotationBody } from "./AdminBody.js"
import { AdminContract, openApiDocument } from "./AdminContract.js"
import { destinationHandlers } from "./AdminDestinationRoutes.js"
import { endpointHandlers } from "./AdminEndpointRoutes.js"
import { keyHandlers } from "./AdminKeyRoutes.js"
import { messageHandlers } from "./AdminMessageRoutes.js"
import type * as S from "./AdminSchemas.js"
import { AdminCaller, seesSource } from "./AdminScopes.js"
import type * as Sec from "./AdminSecretSchemas.js"
import { perSource } from "./AdminSourceLimits.js"
import type * as Src from "./AdminSourceSchemas.js"
import { jobView, messageView, sourceView, usageView } from "./AdminViews.js"
import { audienceHandlers, deletionHandlers } from "./AudienceRoutes.js"
import { errorResponse } from "./ErrorBody.js"
import { rotatedView } from "./SigningViews.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

const decodeSource = decodeWithIssues(SourceConfig)

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

/** An answer whose body is typed by the contract's schema for it (`AdminSchemas`). */
const answer = <A>(body: A, status = 200) => json(body, status)

type AdminFailure =
  | UnknownSource
  | UnknownDestination
  | WriteKeyConflict
  | InvalidAdminRequest
  | BlockedEndpoints
  | StoreError

const failureResponse = (failure: AdminFailure): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  switch (failure._tag) {
    case "UnknownSource":
      return Effect.succeed(errorResponse(404, "not_found", "no such source"))
    case "UnknownDestination":
      return Effect.succeed(errorResponse(404, "not_found", failure.message))
    case "InvalidAdminRequest":
      return Effect.succeed(errorResponse(400, "invalid_request", failure.message, failure.errors))
    case "BlockedEndpoints":
      // Same answer as a settings field that fails validation: the save-time SSRF check (REFERENCE §8).
      return Effect.succeed(errorResponse(400, "invalid_settings", failure.message, failure.errors))
    case "WriteKeyConflict":
      return Effect.succeed(
        errorResponse(409, "write_key_conflict", "another source already uses this write key", [
          { path: "writeKey", message: "is already used by another source" }
        ])
      )
    case "StoreError":
      return storeUnavailableResponse("admin request failed in the store", failure)
  }
}

const putSource = Effect.gen(function*() {
  const relaySources = yield* RelaySources
  const sourceId = yield* param("sourceId")
  const body = yield* readAdminJson
  if (Result.isFailure(body)) return body.failure
  const input = typeof body.success === "object" && body.success !== null && !Array.isArray(body.success)
    ? { ...body.success, id: sourceId }
    : body.success
  const decoded = decodeSource(input)
  if (Result.isFailure(decoded)) {
    return errorResponse(
      400,
      "invalid_settings",
      decoded.failure.map((i) => `${i.path}: ${i.message}`).join("; "),
      decoded.failure
    )
  }
  return answer<typeof Src.SourceView.Type>(sourceView(yield* relaySources.putSource(decoded.success)))
})

/** `POST /admin/sources/{id}/secrets/rotate`: an empty body takes the default `keepOldFor`. */
const rotateSecret = Effect.gen(function*() {
  const relaySources = yield* RelaySources
  const sourceId = yield* param("sourceId")
  const body = yield* readRotationBody
  if (Result.isFailure(body)) return body.failure
  const rotated = yield* relaySources.rotateSecret(sourceId, body.success.keepOldFor as Duration.Input | undefined)
  return answer<typeof Sec.RotatedSecretView.Type>(rotatedView(rotated))
})

const LimitParam = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 1000 }))

const deadLetters = Effect.gen(function*() {
  const relayMessages = yield* RelayMessages
  const params = yield* HttpServerRequest.ParsedSearchParams
  const sourceId = typeof params.sourceId === "string" && params.sourceId !== "" ? params.sourceId : undefined
  const limitInput = typeof params.limit === "string" ? params.limit : "100"
  const limit = Schema.decodeUnknownResult(LimitParam)(limitInput)
  if (Result.isFailure(limit)) {
    return errorResponse(400, "invalid_request", "limit must be a whole number from 1 to 1000", [
      { path: "limit", message: "must be a whole number from 1 to 1000" }
    ])
  }
  const jobs = sourceId !== undefined
    ? yield* relayMessages.deadLetters({ sourceId, limit: limit.success })
    : yield* perSource(
      (sourceId) => relayMessages.deadLetters({ sourceId, limit: limit.success }),
      (job) => job.finishedAt ?? 0,
      limit.success
    )
  return answer<typeof S.DeadLetters.Type>({ deadLetters: jobs.map(jobView) })
})

/**
 * A whole-number query parameter: `fallback` when absent or empty, `NaN` when it is not digits
 * (the Relay refuses it, naming the parameter).
 */
const wholeNumberParam = (value: string | ReadonlyArray<string> | undefined, fallback: number): number => {
  if (value === undefined || value === "") return fallback
  return typeof value === "string" && /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN
}

const usage = Effect.gen(function*() {
  const relayMessages = yield* RelayMessages
  const sourceId = yield* param("sourceId")
  const params = yield* HttpServerRequest.ParsedSearchParams
  const destinationId = typeof params.destinationId === "string" && params.destinationId !== ""
    ? params.destinationId
    : undefined
  const days = yield* relayMessages.usage(sourceId, wholeNumberParam(params.days, defaultUsageDays), destinationId)
  return answer<typeof S.UsageView.Type>(usageView(sourceId, days, destinationId))
})

const sourceMessages = Effect.gen(function*() {
  const relaySources = yield* RelaySources
  const relayMessages = yield* RelayMessages
  const source = yield* relaySources.getSource(yield* param("sourceId"))
  const params = yield* HttpServerRequest.ParsedSearchParams
  const messages = yield* relayMessages.searchMessages({
    sourceId: source.id,
    limit: wholeNumberParam(params.limit, defaultSearchLimit)
  })
  return answer<typeof S.MessageList.Type>({ messages: messages.map(messageView) })
})

const handled = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, AdminFailure, R>) => () =>
  Effect.catch(handler, failureResponse)

const sourceParam = param("sourceId")

const sources = HttpApiBuilder.group(AdminContract, "sources", (handlers) =>
  handlers
    .handleRaw(
      "listSources",
      handled(Effect.gen(function*() {
        const relaySources = yield* RelaySources
        const caller = yield* AdminCaller
        const visible = (yield* relaySources.listSources).filter((source) => seesSource(caller, source.id))
        return answer<typeof Src.SourceList.Type>({ sources: visible.map(sourceView) })
      }))
    )
    .handleRaw("putSource", handled(putSource))
    .handleRaw(
      "getSource",
      handled(Effect.gen(function*() {
        const relaySources = yield* RelaySources
        return answer<typeof Src.SourceView.Type>(sourceView(yield* relaySources.getSource(yield* sourceParam)))
      }))
    )
    .handleRaw(
      "deleteSource",
      handled(Effect.gen(function*() {
        const relaySources = yield* RelaySources
        yield* relaySources.deleteSource(yield* sourceParam)
        return HttpServerResponse.empty({ status: 204 })
      }))
    )
    .handleRaw("rotateSecret", handled(rotateSecret))
    .handleRaw("sourceUsage", handled(usage))
    .handleRaw("sourceMessages", handled(sourceMessages)))

const deadLetterHandlers = HttpApiBuilder.group(AdminContract, "deadLetters", (handlers) =>
  handlers
    .handleRaw("listDeadLetters", handled(deadLetters))
    .handleRaw(
      "replayDeadLetter",
      handled(Effect.gen(function*() {
        const relayMessages = yield* RelayMessages
        const jobId = yield* param("jobId")
        const access = yield* RelayAccess
        const caller = yield* AdminCaller
        if (caller.sourceIds !== null) {
          const sourceId = yield* access.jobSourceId(jobId)
          if (Option.isNone(sourceId) || !seesSource(caller, sourceId.value)) {
            return errorResponse(404, "not_found", `job ${jobId} is not a dead letter`)
          }
        }
        const replayed = yield* relayMessages.replayDeadLetter(jobId).pipe(
          // The job is there, but not its destination: a replay waits for one with its id (REFERENCE §1a).
          Effect.catchTag("UnknownDestination", (gone) =>
            Effect.succeed(errorResponse(409, "destination_deleted", `${gone.message}: the dead letter stays`)))
        )
        if (typeof replayed !== "boolean") {
          return replayed
        }
        return replayed
          ? answer<typeof S.Replayed.Type>({ success: true, jobId, status: "pending" }, 202)
          : errorResponse(404, "not_found", `job ${jobId} is not a dead letter`)
      }))
    ))

const operations = HttpApiBuilder.group(AdminContract, "operations", (handlers) =>
  handlers
    .handleRaw(
      "backlog",
      handled(
        Effect.map(Effect.flatMap(RelayMessages, (relayMessages) => relayMessages.backlog), (backlog) =>
          answer<typeof S.Backlog.Type>(backlog))
      )
    )
    .handleRaw(
      "openApi",
      handled(Effect.sync(() =>
        json(openApiDocument(version))
      ))
    ))

/**
 * The admin API (REFERENCE §5–§7c, §11, §12), served from its contract: `AdminContract` names every route, and its
 * bearer middleware guards each (scopes, source limits, the audit log). The handlers are raw: they read their own
 * bodies and query parameters (size limits, bodies that are not JSON, every failing field named) and answer with
 * hookrelay's error bodies.
 */
export const adminApi = (adminToken: Option.Option<Redacted.Redacted>) =>
  HttpApiBuilder.layer(AdminContract).pipe(
    Layer.provide([
      sources,
      messageHandlers(handled),
      deadLetterHandlers,
      operations,
      endpointHandlers(handled),
      destinationHandlers(handled),
      deletionHandlers,
      audienceHandlers,
      keyHandlers
    ]),
    Layer.provide([adminAuthentication(adminToken), queryDecoding, HttpServer.layerServices])
  )
