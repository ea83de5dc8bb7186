import { Data, Duration } from "effect"
import { blockedAddressCode } from "../network/EgressPolicy.js"

/**
 * How one delivery attempt ended (REFERENCE §4). Classified exactly once, here; the retry policy and the race over URLs
 * read the tag, never a message string.
 *
 * - `Success`: a 2xx answer.
 * - `Retryable`: worth another attempt later (5xx, 408, 429, timeout, refused/reset connection, DNS failure, a
 *   garbled response, and any error we do not recognise). `retryAfter` is the receiver's `Retry-After`, when it sent
 *   one we could read.
 * - `Permanent`: this URL will not succeed by retrying (other 4xx, 3xx — redirects are never followed —, a TLS or
 *   certificate failure, a request undici refuses to send, an address the SSRF guard refuses).
 *
 * `code` is the error code behind a failure without a status (`ECONNREFUSED`, `DEPTH_ZERO_SELF_SIGNED_CERT`, `TIMEOUT`
 * for our own deadline), for metrics and the attempt log.
 */
export type AttemptOutcome = Data.TaggedEnum<{
  Success: { readonly status: number }
  Retryable: {
    readonly reason: string
    readonly status?: number
    readonly code?: string
    readonly retryAfter?: Duration.Duration
  }
  Permanent: { readonly reason: string; readonly status?: number; readonly code?: string }
}>

export const AttemptOutcome = Data.taggedEnum<AttemptOutcome>()

// The constructors once: each property read of a `Data.taggedEnum` makes a new one, and classification runs per attempt.
const success = AttemptOutcome.Success
const retryable = AttemptOutcome.Retryable
const permanent = AttemptOutcome.Permanent

export type Retryable = Data.TaggedEnum.Value<AttemptOutcome, "Retryable">
export type Permanent = Data.TaggedEnum.Value<AttemptOutcome, "Permanent">

/** The code of an attempt that hit our own deadline (Transport's 5 s). */
export const timeoutCode = "TIMEOUT"

/** What a response contributes to the classification. */
export interface ResponseFacts {
  readonly status: number
  readonly retryAfter?: string | undefined
  readonly location?: string | undefined
}

const httpDateShape = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? .*\b\d{2}:\d{2}:\d{2}\b/

/**
 * `Retry-After` as a delay from `now` (epoch ms): delta-seconds or an HTTP-date (RFC 9110 §10.2.3). A date in the
 * past is a zero delay; anything unreadable is ignored (`undefined`), and the normal backoff applies.
 */
export const parseRetryAfter = (value: string | undefined, now: number): Duration.Duration | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Duration.seconds(Number(trimmed))
  // Date.parse is lenient ("-5" is a year to it): only hand it what has the shape of one of the three HTTP-date forms
  // (IMF-fixdate, RFC 850, asctime: a day name and a hh:mm:ss time). It reads the string only, no clock.
  if (!httpDateShape.test(trimmed)) return undefined
  // HTTP-dates are always GMT; asctime says so nowhere, and Date.parse would read it in local time.
  const at = Date.parse(/GMT|UTC/.test(trimmed) ? trimmed : `${trimmed} GMT`)
  return Number.isNaN(at) ? undefined : Duration.millis(Math.max(0, at - now))
}

/**
 * Classifies an HTTP answer. `now` (epoch ms, from Clock) resolves an HTTP-date `Retry-After`. `Retry-After` is read
 * on 429 and 503, the two statuses RFC 9110 defines it for.
 */
export const classifyResponse = (response: ResponseFacts, now: number): AttemptOutcome => {
  const status = response.status
  if (status >= 200 && status <= 299) return success({ status })
  if (status === 429 || status === 503) {
    const retryAfter = parseRetryAfter(response.retryAfter, now)
    return retryable({
      reason: `HTTP ${status}`,
      status,
      ...(retryAfter !== undefined && { retryAfter })
    })
  }
  if (status === 408 || (status >= 500 && status <= 599)) {
    return retryable({ reason: `HTTP ${status}`, status })
  }
  if (status >= 300 && status <= 399) {
    const target = response.location === undefined ? "" : ` to ${response.location}`
    return permanent({ reason: `HTTP ${status} redirect${target} (redirects are not followed)`, status })
  }
  if (status >= 400 && status <= 499) return permanent({ reason: `HTTP ${status}`, status })
  // 1xx as a final answer or a status outside 100-599: not something REFERENCE §4 names; like unknown errors, retryable.
  return retryable({ reason: `unexpected HTTP status ${status}`, status })
}

/** Error codes that mean "try again later": the network or the receiver had a transient problem. */
const retryableCodes: ReadonlyMap<string, string> = new Map([
  ["ECONNREFUSED", "connection refused"],
  ["ECONNRESET", "connection reset"],
  ["EPIPE", "connection reset"],
  ["ECONNABORTED", "connection aborted"],
  ["ETIMEDOUT", "connection timed out"],
  ["EHOSTUNREACH", "host unreachable"],
  ["EHOSTDOWN", "host down"],
  ["ENETUNREACH", "network unreachable"],
  ["ENETDOWN", "network down"],
  ["EADDRNOTAVAIL", "no local address available"],
  ["ENOTFOUND", "DNS lookup failed"],
  ["EAI_AGAIN", "DNS lookup failed (temporary)"],
  ["EAI_FAIL", "DNS lookup failed"],
  ["EAI_NODATA", "DNS lookup failed"],
  ["EAI_NONAME", "DNS lookup failed"],
  ["ENODATA", "DNS lookup failed"],
  ["ESERVFAIL", "DNS lookup failed"],
  ["ETIMEOUT", "DNS lookup timed out"],
  ["UND_ERR_SOCKET", "connection closed by the receiver"],
  ["UND_ERR_CONNECT_TIMEOUT", "connect timed out"],
  ["UND_ERR_HEADERS_TIMEOUT", "response headers timed out"],
  ["UND_ERR_BODY_TIMEOUT", "response body timed out"],
  ["UND_ERR_CLOSED", "HTTP client closed"],
  ["UND_ERR_DESTROYED", "HTTP client destroyed"],
  ["UND_ERR_ABORTED", "request aborted"],
  // A garbled answer is the receiver's fault, like a 5xx; REFERENCE §4's permanent list (4xx, 3xx, certificates) is closed.
  ["UND_ERR_HEADERS_OVERFLOW", "invalid HTTP response (headers too large)"],
  ["UND_ERR_RES_CONTENT_LENGTH_MISMATCH", "invalid HTTP response (content-length mismatch)"],
  ["UND_ERR_INFO", "invalid HTTP response"],
  // A TLS handshake that times out is a network timeout, not an invalid certificate.
  ["ERR_TLS_HANDSHAKE_TIMEOUT", "TLS handshake timed out"]
])

/** OpenSSL's X.509 verification results as Node reports them in `err.code`: an invalid certificate. */
const certificateCodes: ReadonlySet<string> = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_CRL",
  "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
  "UNABLE_TO_DECRYPT_CRL_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "CERT_SIGNATURE_FAILURE",
  "CRL_SIGNATURE_FAILURE",
  "CERT_NOT_YET_VALID",
  "CERT_HAS_EXPIRED",
  "CRL_NOT_YET_VALID",
  "CRL_HAS_EXPIRED",
  "ERROR_IN_CERT_NOT_BEFORE_FIELD",
  "ERROR_IN_CERT_NOT_AFTER_FIELD",
  "ERROR_IN_CRL_LAST_UPDATE_FIELD",
  "ERROR_IN_CRL_NEXT_UPDATE_FIELD",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_CHAIN_TOO_LONG",
  "CERT_REVOKED",
  "INVALID_CA",
  "PATH_LENGTH_EXCEEDED",
  "INVALID_PURPOSE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "HOSTNAME_MISMATCH"
])

/** Requests undici refuses to send: retrying the same request cannot help. */
const invalidRequestCodes: ReadonlySet<string> = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_NOT_SUPPORTED",
  "ERR_INVALID_URL",
  "ERR_INVALID_HTTP_TOKEN",
  "ERR_INVALID_CHAR",
  "ERR_INVALID_ARG_TYPE",
  "ERR_INVALID_ARG_VALUE"
])

/** The verdict for one error code. */
export interface CodeClass {
  readonly retryable: boolean
  readonly reason: string
}

/**
 * Classifies a failure without an HTTP status by its error code (never by its message). Unknown codes, and errors
 * without a code, are retryable on purpose: an error we do not recognise is more likely transient than a reason to give
 * up on the URL, and the 4-hour window still bounds the retries.
 */
export const classifyCode = (code: string | undefined): CodeClass => {
  if (code === undefined) return { retryable: true, reason: "unknown error" }
  const retryable = retryableCodes.get(code)
  if (retryable !== undefined) return { retryable: true, reason: retryable }
  if (certificateCodes.has(code) || code.startsWith("CERT_")) {
    return { retryable: false, reason: "TLS: invalid certificate" }
  }
  // ERR_TLS_* (e.g. ERR_TLS_CERT_ALTNAME_INVALID: wrong host) and ERR_SSL_* (handshake and protocol failures from
  // OpenSSL) are TLS failures; EPROTO is how older Node versions report the latter.
  if (code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code === "EPROTO") {
    return { retryable: false, reason: "TLS handshake failed" }
  }
  if (code.startsWith("HPE_")) return { retryable: true, reason: "invalid HTTP response" }
  if (invalidRequestCodes.has(code)) return { retryable: false, reason: "invalid request" }
  return { retryable: true, reason: "unknown error" }
}

/** The outcome of an error from the transport, given its code (`TIMEOUT` for our own deadline) and message. */
export const classifyError = (code: string | undefined, message: string): Retryable | Permanent => {
  // The SSRF guard refused the address (REFERENCE §8): permanent, and its message is the whole reason
  // ("blocked_address: 127.0.0.1 is loopback (…)").
  if (code === blockedAddressCode) return permanent({ reason: message, code })
  const verdict = classifyCode(code)
  const reason = `${verdict.reason}${code === undefined ? "" : ` (${code})`}: ${message}`
  return verdict.retryable
    ? retryable({ reason, ...(code !== undefined && { code }) })
    : permanent({ reason, ...(code !== undefined && { code }) })
}

/** Our own deadline expired (REFERENCE §4: a timeout is retryable). */
export const timedOut = (message: string): Retryable => retryable({ reason: `timeout: ${message}`, code: timeoutCode })
