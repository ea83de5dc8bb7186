import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { SendError } from "./ClientErrors.js"

/** The first retry waits about this long; each later one twice the previous (±20 % jitter). */
export const initialBackoff = Duration.seconds(1)
/** No backoff delay is longer than this. */
export const maxBackoff = Duration.seconds(30)
/** A longer `Retry-After` is cut to this, so that a server cannot hold a batch (and `close`) for hours. */
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

/**
 * When to try a batch again: jittered exponential backoff from {@link initialBackoff}, at most
 * `maxRetries` times, only after a retryable error; a server's `Retry-After` replaces the backoff
 * delay of that retry.
 */
export const retrySchedule = (maxRetries: number): Schedule.Schedule<Duration.Duration, SendError> =>
  Schedule.max([
    Schedule.min([Schedule.jittered(Schedule.exponential(initialBackoff, 2)), Schedule.spaced(maxBackoff)]),
    Schedule.recurs(maxRetries)
  ]).pipe(
    Schedule.setInputType<SendError>(),
    Schedule.while(({ input }) => isRetryable(input)),
    Schedule.modifyDelay(({ duration, input }) =>
      Effect.succeed(
        input._tag === "HttpError" && input.retryAfterMillis !== undefined
          ? Duration.millis(input.retryAfterMillis)
          : duration
      )
    )
  )
