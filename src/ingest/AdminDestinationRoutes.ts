import { type Duration, Effect, Result } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../domain/DestinationErrors.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { decodeWithIssues, type FieldIssue } from "../domain/Issues.js"
import { Destination, DestinationId } from "../domain/Settings.js"
import type { BlockedEndpoints } from "../network/EgressPolicy.js"
import { RelayDestinations, type SavedDestination, type StoreError } from "../relay/Relay.js"
import { readAdminJson, readRotationBody } from "./AdminBody.js"
import { AdminContract } from "./AdminContract.js"
import type * as D from "./AdminDestinationSchemas.js"
import type * as Sec from "./AdminSecretSchemas.js"
import { destinationView } from "./AdminViews.js"
import { errorResponse } from "./ErrorBody.js"
import { rotatedView } from "./SigningViews.js"

type Failure = UnknownSource | UnknownDestination | InvalidAdminRequest | BlockedEndpoints | StoreError
type Handled = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>
) => () => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const invalid = (issues: ReadonlyArray<FieldIssue>) =>
  errorResponse(400, "invalid_settings", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)

const decodeId = decodeWithIssues(DestinationId)
const decodeDestination = decodeWithIssues(Destination)

/** The path's destination id, or the 400 naming `destinationId`. */
const destinationIdParam = Effect.map(param("destinationId"), (id) =>
  Result.mapError(
    decodeId(id),
    (issues) => invalid(issues.map((issue) => ({ ...issue, path: "destinationId" })))
  ))

const savedView = (saved: SavedDestination): typeof D.DestinationReplaced.Type => ({
  ...destinationView(saved.destination),
  ...(saved.generatedSecret !== undefined && { generatedSecret: saved.generatedSecret })
})

const putDestination = Effect.gen(function*() {
  const relayDestinations = yield* RelayDestinations
  const sourceId = yield* param("sourceId")
  const id = yield* destinationIdParam
  if (Result.isFailure(id)) return id.failure
  const body = yield* readAdminJson
  if (Result.isFailure(body)) return body.failure
  const input = body.success
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return invalid([{ path: "", message: "must be an object" }])
  }
  const decoded = decodeDestination({ ...input, id: id.success })
  if (Result.isFailure(decoded)) return invalid(decoded.failure)
  const saved = yield* relayDestinations.putDestination(sourceId, decoded.success)
  return HttpServerResponse.jsonUnsafe(savedView(saved), { status: saved.created ? 201 : 200 })
})

const rotateSecret = Effect.gen(function*() {
  const relayDestinations = yield* RelayDestinations
  const sourceId = yield* param("sourceId")
  const destinationId = yield* param("destinationId")
  const body = yield* readRotationBody
  if (Result.isFailure(body)) return body.failure
  const keepOldFor = body.success.keepOldFor as Duration.Input | undefined
  const rotated = yield* relayDestinations.rotateSecret(sourceId, destinationId, keepOldFor)
  return HttpServerResponse.jsonUnsafe(
    rotatedView(rotated, destinationId) satisfies typeof Sec.RotatedSecretView.Type
  )
})

/** A source's destinations one at a time (REFERENCE §1a, `AdminDestinationSchemas`); bodies decoded here, by field. */
export const destinationHandlers = (handled: Handled) =>
  HttpApiBuilder.group(AdminContract, "destinations", (handlers) =>
    handlers
      .handleRaw(
        "listDestinations",
        handled(Effect.gen(function*() {
          const relayDestinations = yield* RelayDestinations
          const destinations = yield* relayDestinations.listDestinations(yield* param("sourceId"))
          return HttpServerResponse.jsonUnsafe(
            { destinations: destinations.map(destinationView) } satisfies typeof D.DestinationList.Type
          )
        }))
      )
      .handleRaw("putDestination", handled(putDestination))
      .handleRaw(
        "deleteDestination",
        handled(Effect.gen(function*() {
          const relayDestinations = yield* RelayDestinations
          yield* relayDestinations.deleteDestination(yield* param("sourceId"), yield* param("destinationId"))
          return HttpServerResponse.empty({ status: 204 })
        }))
      )
      .handleRaw("rotateDestinationSecret", handled(rotateSecret)))
