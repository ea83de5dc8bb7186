import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { parseDuration } from "./DurationConfig.js"

/**
 * A destination's retry window and request deadline (REFERENCE §1a, §4), written as operators write durations
 * (`"4 hours"`, `"30 seconds"`, or milliseconds as digits) and kept as written.
 */

const minute = 60_000
const hour = 60 * minute

export const retryWindowBounds = { default: 4 * hour, min: minute, max: 72 * hour } as const
export const timeoutBounds = { default: 5_000, min: 1_000, max: 30_000 } as const

const millisOf = (text: string): number | undefined =>
  Option.match(parseDuration(text), { onNone: () => undefined, onSome: Duration.toMillis })

const durationText = (bounds: { readonly min: number; readonly max: number }, range: string) =>
  Schema.String.annotate({ message: "must be a string" }).check(
    Schema.makeFilter((text) => {
      const millis = millisOf(text)
      if (millis === undefined) return `must be a duration such as "30 seconds" or milliseconds, got "${text}"`
      return (millis >= bounds.min && millis <= bounds.max) || `must be ${range}, got "${text}"`
    })
  )

export const RetryWindow = durationText(retryWindowBounds, "1 minute to 72 hours")
export const RequestTimeout = durationText(timeoutBounds, "1 to 30 seconds")

interface Timing {
  readonly retryWindow?: string | undefined
  readonly timeout?: string | undefined
}

// Settings are immutable values read once per claim and shared by its jobs: each is parsed once.
const parsed = new WeakMap<Timing, { readonly retryWindow: number; readonly timeout: number }>()

const timingOf = (settings: Timing) => {
  let timing = parsed.get(settings)
  if (timing === undefined) {
    timing = {
      retryWindow: settings.retryWindow === undefined
        ? retryWindowBounds.default
        : millisOf(settings.retryWindow) ?? retryWindowBounds.default,
      timeout: settings.timeout === undefined
        ? timeoutBounds.default
        : millisOf(settings.timeout) ?? timeoutBounds.default
    }
    parsed.set(settings, timing)
  }
  return timing
}

/** The retry window in milliseconds: 4 hours when not set. */
export const retryWindowMillis = (settings: Timing): number => timingOf(settings).retryWindow

/** The deadline of one request in milliseconds: 5 seconds when not set. */
export const timeoutMillis = (settings: Timing): number => timingOf(settings).timeout
