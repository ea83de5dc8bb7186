import * as Duration from "effect/Duration"
import type { SendError } from "./ClientErrors.js"

/** During an outage, the first probe waits about this long; each later one twice the previous (±20 % jitter). */
export const initialBackoff = Duration.seconds(1)
/** No probe waits longer than this (jitter included), so that a server back from a restart is found within it. */
export const maxBackoff = Duration.seconds(10)
/** A longer `Retry-After` is cut to this, so that a server cannot hold the client for hours. */
export const maxRetryAfter = Duration.seconds(60)

/** Classification, once: 5xx, 429, timeouts and network errors are retried; other answers are final. */
export const isRetryable = (error: SendError): boolean => {
  switch (error._tag) {
    case "HttpError":
      return error.retryable
    case "RequestTimeout":
      return true
    case "TransportError":
      return error.retryable
  }
}

/**
 * `Retry-After` in milliseconds from `now`: delay-seconds (`"7"`) or an HTTP date, capped at
 * {@link maxRetryAfter}; `undefined` when absent or unreadable.
 */
export const parseRetryAfter = (header: string | undefined, now: number): number | undefined => {
  if (header === undefined) return undefined
  const value = header.trim()
  const millis = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now
  if (Number.isNaN(millis)) return undefined
  return Math.min(Math.max(millis, 0), Duration.toMillis(maxRetryAfter))
}
