import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import {
  AttemptOutcome,
  classifyCode,
  classifyError,
  classifyResponse,
  parseRetryAfter,
  timedOut
} from "../../src/delivery/AttemptOutcome.js"

const now = Date.UTC(2026, 10, 21, 9, 0, 0)

describe("classifyResponse (REFERENCE §4)", () => {
  it.each([200, 201, 204, 299])("%i is a success", (status) => {
    expect(classifyResponse({ status }, now)).toStrictEqual(AttemptOutcome.Success({ status }))
  })

  it.each([500, 502, 503, 504, 599, 408, 429])("%i is retryable", (status) => {
    expect(classifyResponse({ status }, now)).toStrictEqual(
      AttemptOutcome.Retryable({ reason: `HTTP ${status}`, status })
    )
  })

  it.each([400, 401, 403, 404, 410, 413, 422, 499])("%i is permanent", (status) => {
    expect(classifyResponse({ status }, now)).toStrictEqual(
      AttemptOutcome.Permanent({ reason: `HTTP ${status}`, status })
    )
  })

  it.each([301, 302, 303, 307, 308, 300, 304])("%i is permanent: redirects are never followed", (status) => {
    expect(classifyResponse({ status, location: "https://elsewhere.example/" }, now)).toStrictEqual(
      AttemptOutcome.Permanent({
        reason: `HTTP ${status} redirect to https://elsewhere.example/ (redirects are not followed)`,
        status
      })
    )
  })

  it("reads Retry-After in seconds on 429 and 503", () => {
    expect(classifyResponse({ status: 429, retryAfter: "30" }, now)).toStrictEqual(
      AttemptOutcome.Retryable({ reason: "HTTP 429", status: 429, retryAfter: Duration.seconds(30) })
    )
    expect(classifyResponse({ status: 503, retryAfter: "120" }, now)).toStrictEqual(
      AttemptOutcome.Retryable({ reason: "HTTP 503", status: 503, retryAfter: Duration.seconds(120) })
    )
  })

  it("ignores Retry-After on other statuses", () => {
    expect(classifyResponse({ status: 500, retryAfter: "30" }, now)).toStrictEqual(
      AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })
    )
  })

  it("treats a status outside what REFERENCE §4 names as retryable, like an unknown error", () => {
    expect(classifyResponse({ status: 101 }, now)._tag).toBe("Retryable")
  })
})

describe("parseRetryAfter", () => {
  it("reads delta-seconds", () => {
    expect(parseRetryAfter("0", now)).toStrictEqual(Duration.seconds(0))
    expect(parseRetryAfter(" 45 ", now)).toStrictEqual(Duration.seconds(45))
  })

  it("reads an HTTP-date relative to now, a past date as zero", () => {
    expect(parseRetryAfter("Sat, 21 Nov 2026 09:01:30 GMT", now)).toStrictEqual(Duration.millis(90_000))
    expect(parseRetryAfter("Sat, 21 Nov 2026 08:00:00 GMT", now)).toStrictEqual(Duration.millis(0))
    expect(parseRetryAfter("Saturday, 21-Nov-26 09:00:10 GMT", now)).toStrictEqual(Duration.millis(10_000))
    expect(parseRetryAfter("Sat Nov 21 09:00:20 2026", now)).toStrictEqual(Duration.millis(20_000))
  })

  it("ignores what it cannot read", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined()
    expect(parseRetryAfter("soon", now)).toBeUndefined()
    expect(parseRetryAfter("-5", now)).toBeUndefined()
    expect(parseRetryAfter("1.5", now)).toBeUndefined()
    expect(parseRetryAfter("2026-11-21", now)).toBeUndefined()
  })
})

describe("classifyCode: errors are classified by code, never by message", () => {
  it.each([
    ["ECONNREFUSED", "connection refused"],
    ["ECONNRESET", "connection reset"],
    ["EPIPE", "connection reset"],
    ["ETIMEDOUT", "connection timed out"],
    ["EHOSTUNREACH", "host unreachable"],
    ["ENETUNREACH", "network unreachable"],
    ["ENOTFOUND", "DNS lookup failed"],
    ["EAI_AGAIN", "DNS lookup failed (temporary)"],
    ["UND_ERR_SOCKET", "connection closed by the receiver"],
    ["UND_ERR_CONNECT_TIMEOUT", "connect timed out"],
    ["UND_ERR_HEADERS_OVERFLOW", "invalid HTTP response (headers too large)"],
    ["HPE_INVALID_CONSTANT", "invalid HTTP response"],
    ["HPE_INVALID_HEADER_TOKEN", "invalid HTTP response"],
    ["ERR_TLS_HANDSHAKE_TIMEOUT", "TLS handshake timed out"]
  ])("%s is retryable (%s)", (code, reason) => {
    expect(classifyCode(code)).toStrictEqual({ retryable: true, reason })
  })

  it.each([
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "SELF_SIGNED_CERT_IN_CHAIN",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "CERT_HAS_EXPIRED",
    "CERT_NOT_YET_VALID",
    "CERT_SOMETHING_NEW"
  ])("%s is permanent (invalid certificate)", (code) => {
    expect(classifyCode(code)).toStrictEqual({ retryable: false, reason: "TLS: invalid certificate" })
  })

  it.each(["ERR_TLS_CERT_ALTNAME_INVALID", "ERR_SSL_WRONG_VERSION_NUMBER", "EPROTO"])(
    "%s is permanent (TLS handshake)",
    (code) => {
      expect(classifyCode(code)).toStrictEqual({ retryable: false, reason: "TLS handshake failed" })
    }
  )

  it.each(["UND_ERR_INVALID_ARG", "ERR_INVALID_URL", "ERR_INVALID_CHAR"])(
    "%s is permanent (invalid request)",
    (code) => {
      expect(classifyCode(code)).toStrictEqual({ retryable: false, reason: "invalid request" })
    }
  )

  it("treats unknown errors, and errors without a code, as retryable", () => {
    expect(classifyCode("ESOMETHINGNEW")).toStrictEqual({ retryable: true, reason: "unknown error" })
    expect(classifyCode(undefined)).toStrictEqual({ retryable: true, reason: "unknown error" })
  })

  it("does not look at the message: a certificate-sounding message with a reset code is a reset", () => {
    expect(classifyError("ECONNRESET", "self signed certificate")).toStrictEqual(
      AttemptOutcome.Retryable({ reason: "connection reset (ECONNRESET): self signed certificate", code: "ECONNRESET" })
    )
    expect(classifyError("DEPTH_ZERO_SELF_SIGNED_CERT", "socket hang up")).toStrictEqual(
      AttemptOutcome.Permanent({
        reason: "TLS: invalid certificate (DEPTH_ZERO_SELF_SIGNED_CERT): socket hang up",
        code: "DEPTH_ZERO_SELF_SIGNED_CERT"
      })
    )
  })

  it("classifies our own deadline as a retryable timeout", () => {
    expect(timedOut("no complete response within 5s (waiting for the response)")).toStrictEqual(
      AttemptOutcome.Retryable({
        reason: "timeout: no complete response within 5s (waiting for the response)",
        code: "TIMEOUT"
      })
    )
  })
})
