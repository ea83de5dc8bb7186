import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { InvalidRequest, NotFound, PayloadTooLarge, Timestamp } from "./AdminSchemas.js"

/** Endpoint health, enabling and disabling URLs, and bulk recovery of dead letters: bodies and routes. */

const Window = Schema.Struct({
  attempts: Schema.Number,
  successRate: Schema.NullOr(Schema.Number),
  p50LatencyMs: Schema.NullOr(Schema.Number),
  p99LatencyMs: Schema.NullOr(Schema.Number)
})

export const EndpointView = Schema.Struct({
  sourceId: Schema.String,
  url: Schema.String,
  index: Schema.Number,
  state: Schema.Literal("healthy", "failing", "paused", "disabled"),
  consecutiveFailures: Schema.Number,
  lastSuccessAt: Timestamp,
  lastFailure: Schema.NullOr(Schema.Struct({ at: Timestamp, reason: Schema.String })),
  nextProbeAt: Timestamp,
  disabledReason: Schema.NullOr(Schema.String),
  lastHour: Window,
  lastDay: Window
})

export const EndpointList = Schema.Struct({ endpoints: Schema.Array(EndpointView) })

export const EndpointUrl = Schema.Struct({
  url: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  reason: Schema.optional(Schema.String)
})

export const EndpointChanged = Schema.Struct({
  url: Schema.String,
  state: Schema.Literal("enabled", "disabled"),
  /** Enable: whether the URL was disabled before. */
  changed: Schema.Boolean
})

const Time = Schema.Union(
  Schema.Number.pipe(Schema.nonNegative()),
  Schema.String.pipe(Schema.filter((text) => !Number.isNaN(Date.parse(text)) || "must be an ISO 8601 date"))
).annotations({ description: "epoch milliseconds or an ISO 8601 date" })

export const RecoveryInput = Schema.Struct({
  sourceId: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  url: Schema.optional(Schema.String),
  since: Schema.optional(Time),
  until: Schema.optional(Time),
  dryRun: Schema.optional(Schema.Boolean)
})

export const RecoveryView = Schema.Struct({ dryRun: Schema.Boolean, count: Schema.Number })

const recovery = <const Name extends string>(name: Name, action: string, verb: string) =>
  HttpApiEndpoint.post(name, `/admin/dead-letters/${action}`)
    .setPayload(RecoveryInput)
    .addSuccess(RecoveryView)
    .addError(InvalidRequest)
    .addError(NotFound)
    .addError(PayloadTooLarge)
    .annotate(OpenApi.Description, `${verb} a source's dead letters (one URL, a time range); dryRun only counts.`)

const urlSwitch = <const Name extends string>(name: Name, action: string, description: string) =>
  HttpApiEndpoint.post(name, `/admin/endpoints/${action}`)
    .setPayload(EndpointUrl)
    .addSuccess(EndpointChanged)
    .addError(InvalidRequest)
    .addError(PayloadTooLarge)
    .annotate(OpenApi.Description, description)

export const endpointsGroup = HttpApiGroup.make("endpoints")
  .add(
    HttpApiEndpoint.get("listEndpoints", "/admin/endpoints")
      .setUrlParams(Schema.Struct({ sourceId: Schema.String }))
      .addSuccess(EndpointList)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(OpenApi.Description, "The health of each URL of a source.")
  )
  .add(urlSwitch("enableEndpoint", "enable", "Enables a disabled URL again; its health starts afresh."))
  .add(urlSwitch("disableEndpoint", "disable", "Disables a URL: its jobs are dead-lettered until it is enabled."))
  .add(recovery("replayDeadLetters", "replay", "Replays"))
  .add(recovery("purgeDeadLetters", "purge", "Deletes"))
