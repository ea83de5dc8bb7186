import * as Schema from "effect/Schema"
import { Filters } from "./Filters.js"
import { signingFields, signsStandard } from "./Signing.js"

/** Request headers hookrelay owns: a static header may not replace them (SPEC §1). */
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

export const HeaderValue = Schema.String.pipe(
  Schema.filter((value) => !forbiddenInHeaderValue.test(value) || "must not contain CR, LF or NUL characters")
)

/** An absolute `http:` or `https:` URL with a host: what a webhook (or the operator webhook) may be. */
export const isAbsoluteHttpUrl = (value: string): boolean => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
}

export const WebhookUrl = Schema.String.pipe(
  Schema.filter((value) => isAbsoluteHttpUrl(value) || "must be an absolute http: or https: URL")
)

// A Record's key schema silently skips keys that fail it, so header names are checked on the whole record.
export const StaticHeaders = Schema.Record({ key: Schema.String, value: HeaderValue }).pipe(
  Schema.filter((headers) => {
    for (const name of Object.keys(headers)) {
      const problem = headerNameProblem(name)
      if (problem !== undefined) return { path: [name], message: problem }
    }
    return true
  })
)

/** When a URL's circuit opens and when a URL that never succeeds is disabled (defaults: 10 failures, 72 hours). */
export const CircuitSettings = Schema.Struct({
  failureThreshold: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { exact: true }),
  disableAfterHours: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(8760)), {
    exact: true
  })
})
export type CircuitSettings = typeof CircuitSettings.Type

/** At most `perSecond` attempts a second on the URL, evenly spaced; jobs over the rate wait. */
export const RateLimit = Schema.Struct({
  perSecond: Schema.Number.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(100_000))
})
export type RateLimit = typeof RateLimit.Type

export const Endpoint = Schema.Struct({
  url: WebhookUrl,
  headers: Schema.optionalWith(StaticHeaders, { exact: true }),
  circuit: Schema.optionalWith(CircuitSettings, { exact: true }),
  rateLimit: Schema.optionalWith(RateLimit, { exact: true })
})
export type Endpoint = typeof Endpoint.Type

export const maxEndpoints = 5

export const Endpoints = Schema.Array(Endpoint).pipe(
  Schema.filter((endpoints) =>
    (endpoints.length >= 1 && endpoints.length <= maxEndpoints) ||
    `must hold 1 to ${maxEndpoints} endpoints (got ${endpoints.length})`
  )
)

/** The webhook destination of one source (SPEC §1). */
export const WebhookSettings = Schema.Struct({
  enabled: Schema.Boolean,
  sharedSecret: Schema.optionalWith(Schema.String, { exact: true }),
  endpoints: Endpoints,
  /** Rules that keep matching messages from being delivered (SPEC §10). */
  filters: Schema.optionalWith(Filters, { exact: true }),
  /** Standard Webhooks signing, rotation and asymmetric keys (docs/SIGNING.md). */
  ...signingFields
}).pipe(
  Schema.filter((settings) =>
    settings.asymmetric !== true || signsStandard(settings) ||
    { path: ["asymmetric"], message: "needs signing \"standard\" or \"both\"" }
  )
)
export type WebhookSettings = typeof WebhookSettings.Type

/** An empty shared secret counts as not set: no `X-Signature` (vectors/signature.json). */
export const signingSecret = (settings: Pick<WebhookSettings, "sharedSecret">): string | undefined =>
  settings.sharedSecret === undefined || settings.sharedSecret === "" ? undefined : settings.sharedSecret

export const SourceId = Schema.String.pipe(
  Schema.filter((id) =>
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(id) ||
    "must be 1 to 128 characters of letters, digits, '_', '.' or '-', starting with a letter or digit"
  )
)

export const WriteKey = Schema.String.pipe(
  Schema.filter((key) => (key.length >= 1 && key.length <= 256) || "must be 1 to 256 characters"),
  Schema.filter((key) => !/[\s:]/.test(key) || "must not contain white space or ':'")
)

/** A source as configured by the operator (admin API body and `HOOKRELAY_CONFIG` entries). */
export const SourceConfig = Schema.Struct({
  id: SourceId,
  writeKey: WriteKey,
  webhooks: Schema.optionalWith(WebhookSettings, { exact: true })
})
export type SourceConfig = typeof SourceConfig.Type
