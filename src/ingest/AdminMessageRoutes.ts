import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import { RelayMessages, type StoreError } from "../relay/Relay.js"
import { AdminContract } from "./AdminContract.js"
import { parseLogParams } from "./AdminMessageParams.js"
import type * as M from "./AdminMessageSchemas.js"
import type * as S from "./AdminSchemas.js"
import { AdminCaller, seesSource } from "./AdminScopes.js"
import { jobWithAttemptsView, logMessageView } from "./AdminViews.js"
import { errorResponse } from "./ErrorBody.js"

type Handled = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, InvalidAdminRequest | StoreError, R>
) => () => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>

/** An answer whose body is typed by the contract's schema for it (`AdminMessageSchemas`, `AdminSchemas`). */
const json = <A>(body: A) => HttpServerResponse.jsonUnsafe(body, { status: 200 })

/**
 * `GET /admin/messages` (REFERENCE §12): the message log, newest first, filtered by the query's parameters, a page at a
 * time. A key limited to sources that names none lists its own (the bearer middleware refuses any other it names).
 */
const listMessages = Effect.gen(function*() {
  const relayMessages = yield* RelayMessages
  const caller = yield* AdminCaller
  const { issues, query } = parseLogParams(yield* HttpServerRequest.ParsedSearchParams, caller.sourceIds)
  if (issues.length > 0) {
    return errorResponse(400, "invalid_request", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)
  }
  const page = yield* relayMessages.listMessages(query)
  return json<typeof M.MessageLogPageView.Type>({ messages: page.messages.map(logMessageView), next: page.next })
})

/** `GET /admin/messages/{id}`: every job of the message (of the caller's sources) with every attempt. */
const getMessage = Effect.gen(function*() {
  const relayMessages = yield* RelayMessages
  const messageId = (yield* HttpRouter.params).messageId ?? ""
  const caller = yield* AdminCaller
  const jobs = (yield* relayMessages.messageJobs(messageId)).filter((job) => seesSource(caller, job.sourceId))
  if (jobs.length === 0) return errorResponse(404, "not_found", `no jobs for message ${messageId}`)
  return json<typeof S.MessageJobs.Type>({ messageId, jobs: jobs.map(jobWithAttemptsView) })
})

export const messageHandlers = (handled: Handled) =>
  HttpApiBuilder.group(AdminContract, "messages", (handlers) =>
    handlers
      .handleRaw("listMessages", handled(listMessages))
      .handleRaw("getMessage", handled(getMessage)))
