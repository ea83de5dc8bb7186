import { Effect, Result } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type {
  AudiencePropertyTaken,
  AudienceSyncInProgress,
  AudienceSyncInterrupted,
  InvalidAdminRequest,
  UnknownDeletion,
  UnknownSources
} from "../audiences/AudienceErrors.js"
import type { DeletionStatus } from "../audiences/Deletions.js"
import type { TraitValue } from "../audiences/Input.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { formatTimestamp } from "../domain/Timestamp.js"
import { RelayAudiences } from "../relay/Relay.js"
import type { StoreError } from "../relay/Relay.js"
import { AdminContract } from "./AdminContract.js"
import { errorResponse } from "./ErrorBody.js"
import { readLimitedBody } from "./RequestBody.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

/**
 * The admin routes of deletion requests and audience/computed-trait syncs (REFERENCE §5, §6), behind
 * the same bearer token as the rest of the admin API. Thin: decode, call `Relay`, map the answer.
 */

const maxDeletionBodyBytes = 256 * 1024
/** A full membership of `maxSyncSize` ids with quotes and commas, ids of a few dozen characters. */
const maxSyncBodyBytes = 64 * 1024 * 1024

type Failure =
  | InvalidAdminRequest
  | UnknownSources
  | UnknownDeletion
  | UnknownSource
  | AudienceSyncInProgress
  | AudienceSyncInterrupted
  | AudiencePropertyTaken
  | StoreError

const failureResponse = (failure: Failure): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  switch (failure._tag) {
    case "InvalidAdminRequest":
      return Effect.succeed(errorResponse(400, "invalid_request", failure.message, failure.errors))
    case "UnknownSources":
      return Effect.succeed(
        errorResponse(
          400,
          "unknown_sources",
          failure.message,
          failure.sourceIds.map((sourceId) => ({ path: "sourceIds", message: `no such source: ${sourceId}` }))
        )
      )
    case "UnknownDeletion":
      return Effect.succeed(errorResponse(404, "not_found", failure.message))
    case "UnknownSource":
      return Effect.succeed(errorResponse(404, "not_found", "no such source"))
    case "AudienceSyncInProgress":
      return Effect.succeed(errorResponse(409, "sync_in_progress", failure.message))
    case "AudienceSyncInterrupted":
      return Effect.succeed(errorResponse(409, "sync_interrupted", `${failure.message}; run it again`))
    case "AudiencePropertyTaken":
      return Effect.succeed(
        errorResponse(409, "property_taken", failure.message, [
          { path: "audienceName", message: `is sent as ${failure.property}, already used by ${failure.takenBy}` }
        ])
      )
    case "StoreError":
      return storeUnavailableResponse("admin request failed in the store", failure)
  }
}

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

const invalid = (path: string, message: string) =>
  errorResponse(400, "invalid_request", `${path === "" ? "the body" : path} ${message}`, [{ path, message }])

/** The body as a JSON object, or the answer refusing it. */
const readObject = (limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const bytes = yield* readLimitedBody(request, limit).pipe(Effect.result)
    if (Result.isFailure(bytes)) {
      const error = bytes.failure
      return Result.fail(
        error._tag === "PayloadTooLarge"
          ? errorResponse(413, "payload_too_large", `the body is over ${error.limit} bytes`)
          : error._tag === "UnsupportedEncoding"
          ? errorResponse(415, "unsupported_encoding", `unsupported Content-Encoding ${error.encoding}`)
          : errorResponse(400, "unreadable_body", error.reason)
      )
    }
    let body: unknown
    try {
      body = JSON.parse(bytes.success.toString("utf8"))
    } catch {
      return Result.fail(
        errorResponse(400, "invalid_json", "the body must be JSON", [{ path: "", message: "is not valid JSON" }])
      )
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return Result.fail(invalid("", "must be a JSON object"))
    }
    return Result.succeed(body as Record<string, unknown>)
  })

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const deletionView = (deletion: DeletionStatus) => ({
  id: deletion.id,
  userId: deletion.userId,
  sourceIds: deletion.sourceIds,
  createdAt: formatTimestamp(deletion.createdAt),
  jobsRemoved: deletion.jobsRemoved,
  notifications: deletion.notifications.map((notification) => ({
    sourceId: notification.sourceId,
    destinationId: notification.destinationId,
    jobId: notification.jobId,
    status: notification.status,
    attempts: notification.attempts,
    finishedAt: notification.finishedAt === null ? null : formatTimestamp(notification.finishedAt)
  }))
})

const createDeletion = Effect.gen(function*() {
  const relayAudiences = yield* RelayAudiences
  const body = yield* readObject(maxDeletionBodyBytes)
  if (Result.isFailure(body)) return body.failure
  const { sourceIds, userId } = body.success
  if (userId === undefined) return invalid("userId", "is required")
  // Relay validates both fields (the library is called from plain JavaScript too) and names them.
  const deletion = yield* relayAudiences.deleteUser(
    userId as string,
    sourceIds === undefined || sourceIds === null ? undefined : (sourceIds as ReadonlyArray<string>)
  )
  return json({ id: deletion.id }, 202)
})

const syncAudience = Effect.gen(function*() {
  const relayAudiences = yield* RelayAudiences
  const sourceId = yield* param("sourceId")
  const audienceName = yield* param("audienceName")
  const body = yield* readObject(maxSyncBodyBytes)
  if (Result.isFailure(body)) return body.failure
  const userIds = body.success.userIds
  if (userIds === undefined) return invalid("userIds", "is required")
  // Relay checks every element (once: a membership can hold a million ids).
  return json(yield* relayAudiences.syncAudience(sourceId, audienceName, userIds as ReadonlyArray<string>))
})

const syncTrait = Effect.gen(function*() {
  const relayAudiences = yield* RelayAudiences
  const sourceId = yield* param("sourceId")
  const traitName = yield* param("traitName")
  const body = yield* readObject(maxSyncBodyBytes)
  if (Result.isFailure(body)) return body.failure
  const values = body.success.values
  if (values === undefined) return invalid("values", "is required")
  return json(
    yield* relayAudiences.syncComputedTrait(sourceId, traitName, values as Readonly<Record<string, TraitValue>>)
  )
})

const handled = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>) => () =>
  Effect.catch(handler, failureResponse)

/** REFERENCE §5 on the admin API. A deletion is uninterruptible: a client that hangs up does not stop it half way. */
export const deletionHandlers = HttpApiBuilder.group(AdminContract, "deletions", (handlers) =>
  handlers
    .handleRaw("createDeletion", handled(Effect.uninterruptible(createDeletion)), { uninterruptible: true })
    .handleRaw(
      "getDeletion",
      handled(Effect.gen(function*() {
        const relayAudiences = yield* RelayAudiences
        return json(deletionView(yield* relayAudiences.getDeletion(yield* param("deletionId"))))
      }))
    ))

/** REFERENCE §6 on the admin API. Syncs are uninterruptible, and read their (possibly compressed) bodies themselves. */
export const audienceHandlers = HttpApiBuilder.group(AdminContract, "audiences", (handlers) =>
  handlers
    .handleRaw("syncAudience", handled(Effect.uninterruptible(syncAudience)), { uninterruptible: true })
    .handleRaw("syncTrait", handled(Effect.uninterruptible(syncTrait)), { uninterruptible: true }))
