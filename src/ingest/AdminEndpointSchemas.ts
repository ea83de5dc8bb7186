import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  QueryDecoding,
  QueryValue,
  StoreUnavailable,
  Timestamp
} from "./AdminSchemas.js"
import { requires } from "./AdminScopes.js"

/** Endpoint health, enabling and disabling endpoints, and bulk recovery of dead letters: bodies and routes. */

const Window = Schema.Struct({
  attempts: Schema.Number,
  successRate: Schema.NullOr(Schema.Number),
  p50LatencyMs: Schema.NullOr(Schema.Number),
  p99LatencyMs: Schema.NullOr(Schema.Number)
})

export const EndpointView = Schema.Struct({
  sourceId: Schema.String,
  destinationId: Schema.String,
  url: Schema.String,
  index: Schema.Number,
  state: Schema.Literals(["healthy", "failing", "paused", "disabled"]),
  consecutiveFailures: Schema.Number,
  lastSuccessAt: Timestamp,
  lastFailure: Schema.NullOr(Schema.Struct({ at: Timestamp, reason: Schema.String })),
  nextProbeAt: Timestamp,
  disabledReason: Schema.NullOr(Schema.String),
  lastHour: Window,
  lastDay: Window
})

export const EndpointList = Schema.Struct({ endpoints: Schema.Array(EndpointView) })

const NonEmpty = Schema.String.check(Schema.isMinLength(1, { message: "must not be empty" }))

/**
 * The endpoint to enable or disable: (source, destination, URL). A URL alone (or with its source) takes every
 * configured endpoint of that URL (of that source).
 */
export const EndpointUrl = Schema.Struct({
  url: NonEmpty,
  sourceId: Schema.optional(NonEmpty),
  destinationId: Schema.optional(NonEmpty),
  reason: Schema.optional(Schema.String)
})

const EndpointKeyView = Schema.Struct({ sourceId: Schema.String, destinationId: Schema.String, url: Schema.String })

export const EndpointChanged = Schema.Struct({
  url: Schema.String,
  state: Schema.Literals(["enabled", "disabled"]),
  /** Whether any endpoint changed: enable, one was disabled; disable, one was named. */
  changed: Schema.Boolean,
  endpoints: Schema.Array(EndpointKeyView).annotate({ description: "the endpoints enabled or disabled" })
})

const Time = Schema.Union([
  Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)),
  Schema.String.check(Schema.makeFilter((text) => !Number.isNaN(Date.parse(text)) || "must be an ISO 8601 date"))
]).annotate({ description: "epoch milliseconds or an ISO 8601 date" })

export const RecoveryInput = Schema.Struct({
  sourceId: Schema.String.check(Schema.isMinLength(1, { message: "must not be empty" })),
  url: Schema.optional(Schema.String),
  since: Schema.optional(Time),
  until: Schema.optional(Time),
  dryRun: Schema.optional(Schema.Boolean)
})

export const RecoveryView = Schema.Struct({ dryRun: Schema.Boolean, count: Schema.Number })

const recovery = <const Name extends string, const Action extends string>(name: Name, action: Action, verb: string) =>
  HttpApiEndpoint.post(name, `/admin/dead-letters/${action}`, {
    payload: RecoveryInput,
    success: RecoveryView,
    error: [InvalidRequest, NotFound, PayloadTooLarge, StoreUnavailable]
  }).annotate(OpenApi.Description, `${verb} a source's dead letters (one URL, a time range); dryRun only counts.`)

const urlSwitch = <const Name extends string, const Action extends string>(
  name: Name,
  action: Action,
  description: string
) =>
  HttpApiEndpoint.post(name, `/admin/endpoints/${action}`, {
    payload: EndpointUrl,
    success: EndpointChanged,
    error: [InvalidRequest, PayloadTooLarge, StoreUnavailable]
  }).annotate(OpenApi.Description, description)

export const endpointsGroup = HttpApiGroup.make("endpoints")
  .add(
    HttpApiEndpoint.get("listEndpoints", "/admin/endpoints", {
      query: {
        sourceId: QueryValue.annotateKey({ messageMissingKey: "is required" }),
        destinationId: Schema.optional(QueryValue.annotate({ description: "only this destination's endpoints" }))
      },
      success: EndpointList,
      error: [InvalidRequest, NotFound, StoreUnavailable]
    })
      .middleware(QueryDecoding)
      .annotate(OpenApi.Description, "The health of each endpoint (source, destination, URL) of a source.")
      .annotateMerge(requires("sources:read"))
  )
  .add(
    urlSwitch("enableEndpoint", "enable", "Enables disabled endpoints again; their health starts afresh.")
      .annotateMerge(requires("sources:write"))
  )
  .add(
    urlSwitch("disableEndpoint", "disable", "Disables endpoints: their jobs are dead-lettered until enabled.")
      .annotateMerge(requires("sources:write"))
  )
  .add(recovery("replayDeadLetters", "replay", "Replays").annotateMerge(requires("replay")))
  .add(recovery("purgeDeadLetters", "purge", "Deletes").annotateMerge(requires("replay")))
