import * as Schema from "effect/Schema"
import { RequestTimeout, RetryWindow } from "./DestinationTiming.js"
import { Filters } from "./Filters.js"
import { signingFields, signsStandard } from "./Signing.js"
import { Subscribe } from "./Subscription.js"
import { webhooksDestinationId } from "./WebhooksDestination.js"

/** Request headers hookrelay owns: a static header may not replace them (REFERENCE §1). */
export const reservedHeaderNames: ReadonlySet<string> = new Set([
  "user-agent",
  "content-type",
  "content-length",
  "host",
  "transfer-encoding",
  "x-signature",
  "webhook-id",
  "webhook-timestamp",
  "webhook-signature"
])

const httpToken = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const forbiddenInHeaderValue = /[\r\n\0]/

const headerNameProblem = (name: string): string | undefined => {
  if (!httpToken.test(name)) return "must be a valid HTTP header name (an RFC 9110 token)"
  if (reservedHeaderNames.has(name.toLowerCase())) {
    return `the header ${name} is set by hookrelay and cannot be overridden`
  }
  return undefined
}

export const HeaderValue = Schema.String.check(
  Schema.makeFilter((value) => !forbiddenInHeaderValue.test(value) || "must not contain CR, LF or NUL characters")
)

/** An absolute `http:` or `https:` URL with a host: what a webhook (or the operator webhook) may be. */
export const isAbsoluteHttpUrl = (value: string): boolean => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
}

export const WebhookUrl = Schema.String.check(
  Schema.makeFilter((value) => isAbsoluteHttpUrl(value) || "must be an absolute http: or https: URL")
)

// A Record's key schema silently skips keys that fail it, so header names are checked on the whole record.
export const StaticHeaders = Schema.Record(Schema.String, HeaderValue).check(
  Schema.makeFilter((headers) => {
    for (const name of Object.keys(headers)) {
      const problem = headerNameProblem(name)
      if (problem !== undefined) return { path: [name], issue: problem }
    }
    return true
  })
)

/** When a URL's circuit opens and when a URL that never succeeds is disabled (defaults: 10 failures, 72 hours). */
export const CircuitSettings = Schema.Struct({
  // A number that is not whole is refused as such, not also as out of range.
  failureThreshold: Schema.optionalKey(
    Schema.Number.check(Schema.isInt().abort(), Schema.isBetween({ minimum: 1, maximum: 10_000 }))
  ),
  disableAfterHours: Schema.optionalKey(Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(8760)))
})
export type CircuitSettings = typeof CircuitSettings.Type

/** At most `perSecond` attempts a second on the URL, evenly spaced; jobs over the rate wait. */
export const RateLimit = Schema.Struct({
  perSecond: Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(100_000))
})
export type RateLimit = typeof RateLimit.Type

export const Endpoint = Schema.Struct({
  url: WebhookUrl,
  headers: Schema.optionalKey(StaticHeaders),
  circuit: Schema.optionalKey(CircuitSettings),
  rateLimit: Schema.optionalKey(RateLimit)
})
export type Endpoint = typeof Endpoint.Type

export const maxEndpoints = 5

export const Endpoints = Schema.Array(Endpoint).check(
  Schema.makeFilter((endpoints) =>
    (endpoints.length >= 1 && endpoints.length <= maxEndpoints) ||
    `must hold 1 to ${maxEndpoints} endpoints (got ${endpoints.length})`
  )
)

export const maxDestinationNameLength = 200

/** What a destination is besides its id (REFERENCE §1, §1a); the `webhooks` object is exactly these fields. */
const destinationFields = {
  enabled: Schema.Boolean,
  name: Schema.optionalKey(
    Schema.String.check(
      Schema.makeFilter((name) =>
        (name.length >= 1 && name.length <= maxDestinationNameLength) ||
        `must be 1 to ${maxDestinationNameLength} characters`
      )
    )
  ),
  sharedSecret: Schema.optionalKey(Schema.String),
  endpoints: Endpoints,
  /** Rules that keep matching messages from being delivered (REFERENCE §10). */
  filters: Schema.optionalKey(Filters),
  /** The message types (and track events) the destination receives; everything when absent. */
  subscribe: Schema.optionalKey(Subscribe),
  /** How long a job is retried from its first attempt (default 4 hours). */
  retryWindow: Schema.optionalKey(RetryWindow),
  /** The deadline of each request (default 5 seconds). */
  timeout: Schema.optionalKey(RequestTimeout),
  /** Standard Webhooks signing, rotation and asymmetric keys (docs/SIGNING.md). */
  ...signingFields
}

const asymmetricNeedsStandard = Schema.makeFilter((settings: Parameters<typeof signsStandard>[0]) =>
  settings.asymmetric !== true || signsStandard(settings) ||
  { path: ["asymmetric"], issue: "needs signing \"standard\" or \"both\"" }
)

/** The `webhooks` object of a source: its destination with the id `webhooks` (REFERENCE §1, §1a). */
export const WebhookSettings = Schema.Struct(destinationFields).check(asymmetricNeedsStandard)
export type WebhookSettings = typeof WebhookSettings.Type

export { webhooksDestinationId } from "./WebhooksDestination.js"

export const maxDestinations = 20

export const DestinationId = Schema.String.annotate({ message: "must be a string" }).check(
  Schema.makeFilter((id) =>
    /^[a-z0-9][a-z0-9_-]{0,63}$/.test(id) ||
    "must be a slug: 1 to 64 lowercase letters, digits, '_' or '-', starting with a letter or digit"
  )
)

/** One destination of a source (REFERENCE §1a). */
export const Destination = Schema.Struct({ id: DestinationId, ...destinationFields }).check(asymmetricNeedsStandard)
export type Destination = typeof Destination.Type

/** A source's destinations: 0 to 20, ids unique in the source. */
export const Destinations = Schema.Array(Destination).check(
  Schema.makeFilter((destinations: ReadonlyArray<{ readonly id: string }>) =>
    destinations.length <= maxDestinations ||
    `must hold at most ${maxDestinations} destinations (got ${destinations.length})`
  ).abort(),
  Schema.makeFilter((destinations: ReadonlyArray<{ readonly id: string }>) => {
    const seen = new Set<string>()
    for (const [index, destination] of destinations.entries()) {
      if (seen.has(destination.id)) {
        return { path: [index, "id"], issue: `"${destination.id}" is the id of an earlier destination` }
      }
      seen.add(destination.id)
    }
    return true
  })
)

/** An empty shared secret counts as not set: no `X-Signature` (vectors/signature.json). */
export const signingSecret = (settings: Pick<WebhookSettings, "sharedSecret">): string | undefined =>
  settings.sharedSecret === undefined || settings.sharedSecret === "" ? undefined : settings.sharedSecret

export const SourceId = Schema.String.check(
  Schema.makeFilter((id) =>
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(id) ||
    "must be 1 to 128 characters of letters, digits, '_', '.' or '-', starting with a letter or digit"
  )
)

// One refusal at a time: the characters are checked on a key of the right length.
export const WriteKey = Schema.String.check(
  Schema.makeFilter((key: string) => (key.length >= 1 && key.length <= 256) || "must be 1 to 256 characters").abort(),
  Schema.makeFilter((key: string) => !/[\s:]/.test(key) || "must not contain white space or ':'")
)

/**
 * A source as configured by the operator (admin API body and `HOOKRELAY_CONFIG` entries). `destinations` replaces
 * the source's list; `webhooks` sets its destination `webhooks` alone (`Destinations.applySourceConfig`), so the
 * list may not also hold one.
 */
export const SourceConfig = Schema.Struct({
  id: SourceId,
  writeKey: WriteKey,
  webhooks: Schema.optionalKey(WebhookSettings),
  destinations: Schema.optionalKey(Destinations)
}).check(
  Schema.makeFilter((source) => {
    if (source.webhooks === undefined || source.destinations === undefined) return true
    const index = source.destinations.findIndex((destination) => destination.id === webhooksDestinationId)
    return index < 0 || {
      path: ["destinations", index, "id"],
      issue: `"${webhooksDestinationId}" is given as the webhooks object too: give it once`
    }
  })
)
export type SourceConfig = typeof SourceConfig.Type
