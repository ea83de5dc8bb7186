import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { BatchDefaults } from "../domain/Batch.js"
import { maxRequestBytes } from "../domain/Limits.js"
import { isJsonObject, type MessageType, messageTypes } from "../domain/Message.js"
import { serializedSizeBound } from "../domain/SizeBound.js"
import { parseIso8601 } from "../domain/Timestamp.js"
import { formatTraceparent } from "../domain/TraceContext.js"
import { Relay } from "../relay/Relay.js"
import type { StoredSource } from "../relay/Relay.js"
import { writeKeyFromBasicAuth } from "./Auth.js"
import { errorResponse } from "./ErrorBody.js"
import { ingestFailureResponse } from "./IngestFailure.js"
import { readLimitedBody } from "./RequestBody.js"

const success = HttpServerResponse.jsonUnsafe({ success: true })

/** The body's JSON; a leading byte order mark, which some HTTP clients write and JSON allows ignoring, is skipped. */
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
  } catch {
    return undefined
  }
}

interface ParsedRequest {
  readonly items: ReadonlyArray<unknown>
  readonly defaults: BatchDefaults
  readonly batchSentAt?: string | undefined
}

const objectField = (body: Record<string, unknown>, field: "context" | "integrations") => {
  const value = body[field]
  if (value === undefined || value === null) return { ok: true as const, value: undefined }
  return isJsonObject(value) ? { ok: true as const, value } : { ok: false as const }
}

const parseBatchEnvelope = (body: Record<string, unknown>): ParsedRequest | HttpServerResponse.HttpServerResponse => {
  if (!Array.isArray(body.batch)) {
    return errorResponse(400, "invalid_request", "batch must be an array of messages", [
      { path: "batch", message: "must be an array" }
    ])
  }
  const context = objectField(body, "context")
  const integrations = objectField(body, "integrations")
  for (const [path, field] of [["context", context], ["integrations", integrations]] as const) {
    if (!field.ok) {
      return errorResponse(400, "invalid_request", `${path} must be an object`, [{
        path,
        message: "must be an object"
      }])
    }
  }
  const sentAt = body.sentAt
  if (sentAt !== undefined && sentAt !== null && (typeof sentAt !== "string" || parseIso8601(sentAt) === undefined)) {
    return errorResponse(400, "invalid_request", "sentAt must be an ISO 8601 date-time", [
      { path: "sentAt", message: "must be an ISO 8601 date-time" }
    ])
  }
  return {
    items: body.batch,
    defaults: { context: context.value, integrations: integrations.value },
    batchSentAt: typeof sentAt === "string" ? sentAt : undefined
  }
}

/**
 * One endpoint of the tracking API: read the body within the size limit, parse it as JSON
 * whatever Content-Type says, authenticate the write key (Basic auth or `writeKey` in the body),
 * then hand the messages to `Relay.ingest`, which answers only after the store committed. `traced` (telemetry on): the
 * request's span is annotated and its context stored with the jobs, for their deliveries to join the trace.
 */
const handle = (expectedType: MessageType | undefined, traced: boolean) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const relay = yield* Relay
    const headerKey = writeKeyFromBasicAuth(request.headers.authorization)
    let headerSource: StoredSource | undefined
    if (request.headers.authorization !== undefined && headerKey !== undefined) {
      // A wrong key in the header is refused before the body is read. Only an unknown key is a 401: a store that cannot
      // look the key up is a 503 (analytics-node drops a batch answered 401 for good).
      const known = yield* relay.authenticate(headerKey).pipe(
        Effect.map((source): StoredSource | undefined => source),
        Effect.catchTag("UnknownSource", () => Effect.succeed(undefined))
      )
      if (known === undefined) return errorResponse(401, "unauthorized", "unknown write key")
      headerSource = known
    }
    const text = (yield* readLimitedBody(request, maxRequestBytes)).toString("utf8")
    const body = parseJson(text)
    if (!isJsonObject(body)) {
      return errorResponse(400, "invalid_json", "the body must be a JSON object", [
        { path: "", message: body === undefined ? "is not valid JSON" : "must be a JSON object" }
      ])
    }
    const writeKey = headerKey ?? (typeof body.writeKey === "string" ? body.writeKey : undefined)
    if (writeKey === undefined) {
      return errorResponse(401, "unauthorized", "a write key is required (HTTP Basic user name or writeKey)")
    }
    const source = headerSource ?? (yield* relay.authenticate(writeKey))
    const parsed: ParsedRequest | HttpServerResponse.HttpServerResponse = expectedType === undefined
      ? parseBatchEnvelope(body)
      : { items: [withoutWriteKey(body)], defaults: {} }
    if (HttpServerResponse.isHttpServerResponse(parsed)) return parsed
    const traceparent = traced ? yield* requestTraceparent(source.id, parsed.items.length) : undefined
    yield* relay.ingest(source.id, parsed.items, {
      expectedType,
      defaults: parsed.defaults,
      batchSentAt: parsed.batchSentAt,
      apiCall: true,
      sizeBound: serializedSizeBound(text),
      traceparent
    })
    return success
  }).pipe(
    Effect.catch(ingestFailureResponse),
    // A client that disconnects must not interrupt a commit half-way.
    Effect.uninterruptible
  )

/** The request's span (the HTTP server's, child of an incoming `traceparent`) annotated, and its own `traceparent`. */
const requestTraceparent = (sourceId: string, messages: number) =>
  Effect.map(Effect.option(Effect.currentSpan), (span) =>
    Option.match(span, {
      onNone: () => undefined,
      onSome: (span) => {
        span.attribute("hookrelay.source.id", sourceId)
        span.attribute("hookrelay.messages", messages)
        return formatTraceparent(span)
      }
    }))

const withoutWriteKey = (body: Record<string, unknown>): Record<string, unknown> => {
  if (!("writeKey" in body)) return body
  const { writeKey: _writeKey, ...message } = body
  return message
}

/** The tracking API's paths, full and short: everything under `/v1/`. */
export const isTrackingRequest = (request: HttpServerRequest.HttpServerRequest) => request.url.startsWith("/v1/")

/**
 * The short paths Segment's own API answers too: analytics.js posts each message to `/v1/` and its type's first letter
 * (`/v1/t`, `/v1/p`, …) and its batching mode, like the mobile libraries (analytics-kotlin, analytics-swift,
 * analytics-react-native), posts batches to `/v1/b`.
 */
const shortPath = (type: MessageType) => `/v1/${type.charAt(0)}` as const

/**
 * The Segment-compatible tracking API (REFERENCE §2), at its full and its short paths. `traced` is decided once, when the
 * server is built: untraced, a request captures no trace context.
 */
export const trackingRoutes = (traced: boolean) => [
  HttpRouter.route("POST", "/v1/batch", handle(undefined, traced)),
  HttpRouter.route("POST", "/v1/import", handle(undefined, traced)),
  HttpRouter.route("POST", "/v1/b", handle(undefined, traced)),
  ...messageTypes.flatMap((type) => [
    HttpRouter.route("POST", `/v1/${type}`, handle(type, traced)),
    HttpRouter.route("POST", shortPath(type), handle(type, traced))
  ])
]
