import { ByteSize, Effect, Result } from "effect"
import { HttpIncomingMessage, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { errorResponse } from "./ErrorBody.js"

/** The most an admin request's body may hold: settings and recovery filters are small. */
export const maxAdminBodyBytes = 256 * 1024

/**
 * How far a body is read before the connection is given up on. Reading past `maxAdminBodyBytes` lets the 413 reach a
 * client that is still sending (a server that stops reading resets the connection under it), and memory stays bounded.
 */
const maxReadBytes = ByteSize.bytes(8 * 1024 * 1024)

const tooLarge = errorResponse(413, "payload_too_large", `the body is over ${maxAdminBodyBytes / 1024} KB`)

/**
 * The admin request's body as text, or the 413 to answer instead: over `maxAdminBodyBytes`, or not read to its end
 * within `maxReadBytes`. The read is cached per request, so every read of it has this bound.
 */
export const adminBodyText: Effect.Effect<
  Result.Result<string, HttpServerResponse.HttpServerResponse>,
  never,
  HttpServerRequest.HttpServerRequest
> = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
  request.text.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, maxReadBytes),
    Effect.map((text) => text.length <= maxAdminBodyBytes ? Result.succeed(text) : Result.fail(tooLarge)),
    Effect.orElseSucceed(() => Result.fail(tooLarge))
  ))

/** The body's JSON, or the 400 answer saying it is not JSON. */
export const parseAdminJson = (text: string): Result.Result<unknown, HttpServerResponse.HttpServerResponse> => {
  try {
    return Result.succeed(JSON.parse(text) as unknown)
  } catch {
    return Result.fail(
      errorResponse(400, "invalid_json", "the body must be JSON", [{ path: "", message: "is not valid JSON" }])
    )
  }
}

/** `adminBodyText`, then `parseAdminJson`. */
export const readAdminJson = Effect.map(adminBodyText, Result.flatMap(parseAdminJson))

/**
 * The body of a secret rotation: `{ keepOldFor? }`, an empty body for the default, or the 413 or 400 answer instead.
 * `keepOldFor` itself is checked by the Relay, which names it.
 */
export const readRotationBody: Effect.Effect<
  Result.Result<{ readonly keepOldFor?: unknown }, HttpServerResponse.HttpServerResponse>,
  never,
  HttpServerRequest.HttpServerRequest
> = Effect.map(adminBodyText, (text) =>
  text.pipe(
    Result.flatMap((body) => body.trim() === "" ? Result.succeed({}) : parseAdminJson(body)),
    Result.flatMap((input) =>
      typeof input === "object" && input !== null && !Array.isArray(input)
        ? Result.succeed(input as { readonly keepOldFor?: unknown })
        : Result.fail(
          errorResponse(400, "invalid_request", "the body must be a JSON object", [
            { path: "", message: "must be an object" }
          ])
        )
    )
  ))
