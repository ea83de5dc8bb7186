import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Duration, Effect, Either, type Option, type Redacted, Schema } from "effect"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { decodeWithIssues } from "../domain/Issues.js"
import { SourceConfig } from "../domain/Settings.js"
import { version } from "../domain/Version.js"
import type { BlockedEndpoints } from "../network/EgressPolicy.js"
import { defaultSearchLimit, defaultUsageDays, Relay } from "../relay/Relay.js"
import type { StoreError, WriteKeyConflict } from "../relay/Relay.js"
import { requireAdmin } from "./AdminAuth.js"
import { adminBodyText, parseAdminJson, readAdminJson } from "./AdminBody.js"
import { openApiDocument } from "./AdminContract.js"
import { endpointRoutes } from "./AdminEndpointRoutes.js"
import type * as S from "./AdminSchemas.js"
import type * as Sec from "./AdminSecretSchemas.js"
import type * as Src from "./AdminSourceSchemas.js"
import { jobView, jobWithAttemptsView, messageView, sourceView, usageView } from "./AdminViews.js"
import { errorResponse } from "./ErrorBody.js"
import { rotatedView } from "./SigningViews.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

const decodeSource = decodeWithIssues(SourceConfig)

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const json = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status })

/** An answer whose body is typed by the contract's schema for it (`AdminSchemas`). */
const answer = <A>(body: A, status = 200) => json(body, status)

type AdminFailure = UnknownSource | WriteKeyConflict | InvalidAdminRequest | BlockedEndpoints | StoreError

const failureResponse = (failure: AdminFailure): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  switch (failure._tag) {
    case "UnknownSource":
      return Effect.succeed(errorResponse(404, "not_found", "no such source"))
    case "InvalidAdminRequest":
      return Effect.succeed(errorResponse(400, "invalid_request", failure.message, failure.errors))
    case "BlockedEndpoints":
      // Same answer as a settings field that fails validation: the save-time SSRF check (SPEC §8).
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
  const relay = yield* Relay
  const sourceId = yield* param("sourceId")
  const body = yield* readAdminJson
  if (Either.isLeft(body)) return body.left
  const input = typeof body.right === "object" && body.right !== null && !Array.isArray(body.right)
    ? { ...body.right, id: sourceId }
    : body.right
  const decoded = decodeSource(input)
  if (Either.isLeft(decoded)) {
    return errorResponse(
      400,
      "invalid_settings",
      decoded.left.map((i) => `${i.path}: ${i.message}`).join("; "),
      decoded.left
    )
  }
  return answer<typeof Src.SourceView.Type>(sourceView(yield* relay.putSource(decoded.right)))
})

/** `POST /admin/sources/{id}/secrets/rotate`: an empty body takes the default `keepOldFor`. */
const rotateSecret = Effect.gen(function*() {
  const relay = yield* Relay
  const sourceId = yield* param("sourceId")
  const body = Either.flatMap(
    yield* adminBodyText,
    (text): Either.Either<unknown, HttpServerResponse.HttpServerResponse> =>
      text.trim() === "" ? Either.right({}) : parseAdminJson(text)
  )
  if (Either.isLeft(body)) return body.left
  const input: unknown = body.right
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return errorResponse(400, "invalid_request", "the body must be a JSON object", [
      { path: "", message: "must be an object" }
    ])
  }
  const rotated = yield* relay.rotateSecret(sourceId, (input as { keepOldFor?: Duration.DurationInput }).keepOldFor)
  return answer<typeof Sec.RotatedSecretView.Type>(rotatedView(rotated))
})

const LimitParam = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))

const deadLetters = Effect.gen(function*() {
  const relay = yield* Relay
  const params = yield* HttpServerRequest.ParsedSearchParams
  const sourceId = typeof params.sourceId === "string" && params.sourceId !== "" ? params.sourceId : undefined
  const limitInput = typeof params.limit === "string" ? params.limit : "100"
  const limit = Schema.decodeUnknownEither(LimitParam)(limitInput)
  if (Either.isLeft(limit)) {
    return errorResponse(400, "invalid_request", "limit must be a whole number from 1 to 1000", [
      { path: "limit", message: "must be a whole number from 1 to 1000" }
    ])
  }
  const jobs = yield* relay.deadLetters({ sourceId, limit: limit.right })
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

const textParam = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  value === undefined ? undefined : typeof value === "string" ? value : ""

const usage = Effect.gen(function*() {
  const relay = yield* Relay
  const sourceId = yield* param("sourceId")
  const params = yield* HttpServerRequest.ParsedSearchParams
  const days = yield* relay.usage(sourceId, wholeNumberParam(params.days, defaultUsageDays))
  return answer<typeof S.UsageView.Type>(usageView(sourceId, days))
})

const searchMessages = Effect.gen(function*() {
  const relay = yield* Relay
  const params = yield* HttpServerRequest.ParsedSearchParams
  const messages = yield* relay.searchMessages({
    userId: textParam(params.userId),
    sourceId: textParam(params.sourceId),
    limit: wholeNumberParam(params.limit, defaultSearchLimit)
  })
  return answer<typeof S.MessageList.Type>({ messages: messages.map(messageView) })
})

const sourceMessages = Effect.gen(function*() {
  const relay = yield* Relay
  const source = yield* relay.getSource(yield* param("sourceId"))
  const params = yield* HttpServerRequest.ParsedSearchParams
  const messages = yield* relay.searchMessages({
    sourceId: source.id,
    limit: wholeNumberParam(params.limit, defaultSearchLimit)
  })
  return answer<typeof S.MessageList.Type>({ messages: messages.map(messageView) })
})

/** The admin API (SPEC §7, §11, §12), every route behind the bearer token; `AdminContract` describes it. */
export const adminRoutes = (adminToken: Option.Option<Redacted.Redacted>) => {
  const guard = requireAdmin(adminToken)
  const route = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, AdminFailure, R>) =>
    guard(Effect.catchAll(handler, failureResponse))
  return HttpRouter.empty.pipe(
    HttpRouter.get(
      "/admin/sources",
      route(
        Effect.map(
          Effect.flatMap(Relay, (relay) => relay.listSources),
          (list) => answer<typeof Src.SourceList.Type>({ sources: list.map(sourceView) })
        )
      )
    ),
    HttpRouter.put("/admin/sources/:sourceId", route(putSource)),
    HttpRouter.get(
      "/admin/sources/:sourceId",
      route(Effect.gen(function*() {
        const relay = yield* Relay
        return answer<typeof Src.SourceView.Type>(sourceView(yield* relay.getSource(yield* param("sourceId"))))
      }))
    ),
    HttpRouter.del(
      "/admin/sources/:sourceId",
      route(Effect.gen(function*() {
        const relay = yield* Relay
        yield* relay.deleteSource(yield* param("sourceId"))
        return HttpServerResponse.empty({ status: 204 })
      }))
    ),
    HttpRouter.post("/admin/sources/:sourceId/secrets/rotate", route(rotateSecret)),
    HttpRouter.get("/admin/sources/:sourceId/usage", route(usage)),
    HttpRouter.get("/admin/sources/:sourceId/messages", route(sourceMessages)),
    HttpRouter.get("/admin/messages", route(searchMessages)),
    HttpRouter.get(
      "/admin/messages/:messageId",
      route(Effect.gen(function*() {
        const relay = yield* Relay
        const messageId = yield* param("messageId")
        const jobs = yield* relay.messageJobs(messageId)
        if (jobs.length === 0) return errorResponse(404, "not_found", `no jobs for message ${messageId}`)
        return answer<typeof S.MessageJobs.Type>({ messageId, jobs: jobs.map(jobWithAttemptsView) })
      }))
    ),
    HttpRouter.get("/admin/dead-letters", route(deadLetters)),
    HttpRouter.post(
      "/admin/dead-letters/:jobId/replay",
      route(Effect.gen(function*() {
        const relay = yield* Relay
        const jobId = yield* param("jobId")
        const replayed = yield* relay.replayDeadLetter(jobId)
        return replayed
          ? answer<typeof S.Replayed.Type>({ success: true, jobId, status: "pending" }, 202)
          : errorResponse(404, "not_found", `job ${jobId} is not a dead letter`)
      }))
    ),
    HttpRouter.get(
      "/admin/backlog",
      route(
        Effect.map(Effect.flatMap(Relay, (relay) => relay.backlog), (backlog) => answer<typeof S.Backlog.Type>(backlog))
      )
    ),
    HttpRouter.get("/admin/openapi.json", route(Effect.sync(() => json(openApiDocument(version))))),
    endpointRoutes(route)
  )
}
