import { Clock, Duration, Effect, Schedule } from "effect"
import { retryWindowBounds } from "../domain/DestinationTiming.js"

/**
 * REFERENCE §4: exponential backoff from 1 s, factor 2, each delay capped at 10 minutes, jittered, for the
 * destination's retry window (4 hours unless it sets one).
 */
export const initialDelay = Duration.seconds(1)
export const backoffFactor = 2
export const maxDelay = Duration.minutes(10)
export const deliveryWindow = Duration.millis(retryWindowBounds.default)
/** The shortest wait a `Retry-After` can ask for: `Retry-After: 0` must not turn into a tight loop for 4 hours. */
export const minRetryAfter = Duration.seconds(1)

/** What the policy reads from a failed attempt: a `Retryable` outcome fits. */
export interface RetryInput {
  readonly retryAfter?: Duration.Duration | undefined
}

export interface RetryPolicyOptions {
  /** Epoch ms of the job's first attempt on any URL, persisted, so a restarted process keeps the same window. */
  readonly firstAttemptAt: number
  /**
   * Attempts already made on this URL before the first one this schedule follows (a job resumed after a restart or a
   * deferral). The first delay is then `initialDelay × factor^priorAttempts`: the backoff continues where it stopped.
   */
  readonly priorAttempts?: number | undefined
  readonly initialDelay?: Duration.Input | undefined
  readonly factor?: number | undefined
  readonly maxDelay?: Duration.Input | undefined
  readonly window?: Duration.Input | undefined
}

/** The last moment (epoch ms) an attempt may start: first attempt + window. */
export const deadline = (firstAttemptAt: number, window: Duration.Input = deliveryWindow): number =>
  firstAttemptAt + Duration.toMillis(Duration.fromInputUnsafe(window))

/**
 * The retry schedule of one URL. Its input is the failed attempt (a `Retryable` outcome); its output is the delay
 * before the next attempt.
 *
 * - delay n (0-based, counting `priorAttempts`) = min(10 min, jitter(min(10 min, 1 s × 2^n))): `Schedule.jittered`
 *   scales by [0.8, 1.2] and the cap is applied again after it, so no delay ever exceeds 10 minutes;
 * - a `retryAfter` on the input replaces that delay (at least `minRetryAfter`); the exponent still advances;
 * - it stops when the next attempt would start after `firstAttemptAt + window`, checked against Clock at each
 *   decision — a deadline, unlike `Schedule.upTo`, which starts counting at the first failure and can overshoot.
 */
export const retryPolicy = (options: RetryPolicyOptions): Schedule.Schedule<Duration.Duration, RetryInput> => {
  const factor = options.factor ?? backoffFactor
  const cap = Duration.fromInputUnsafe(options.maxDelay ?? maxDelay)
  const capMillis = Duration.toMillis(cap)
  const start = Duration.times(
    Duration.fromInputUnsafe(options.initialDelay ?? initialDelay),
    // Past 2^30 s every delay is the cap anyway; bounding the exponent keeps the numbers finite.
    Math.pow(factor, Math.min(options.priorAttempts ?? 0, 30))
  )
  const lastStart = deadline(options.firstAttemptAt, options.window ?? deliveryWindow)
  return Schedule.exponential(start, factor).pipe(
    Schedule.setInputType<RetryInput>(),
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, cap))),
    Schedule.jittered,
    // Whole milliseconds (TestClock instants stay integers), and the cap again: jitter may have pushed it to 12 min.
    Schedule.modifyDelay(({ duration }) =>
      Effect.succeed(Duration.millis(Math.min(Math.round(Duration.toMillis(duration)), capMillis)))
    ),
    Schedule.modifyDelay(({ duration, input }) =>
      Effect.succeed(input.retryAfter === undefined ? duration : Duration.max(input.retryAfter, minRetryAfter))
    ),
    // The deadline, checked against Clock at each decision.
    Schedule.while(({ duration }) =>
      Effect.map(Clock.currentTimeMillis, (now) => now + Duration.toMillis(duration) <= lastStart)
    ),
    // Its output is the delay it chose.
    Schedule.map(({ duration }) => duration)
  )
}
