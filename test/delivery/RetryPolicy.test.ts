import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Option, Pull, Random, Schedule } from "effect"
import { TestClock } from "effect/testing"
import { deadline, retryPolicy } from "../../src/delivery/RetryPolicy.js"
import type { RetryInput } from "../../src/delivery/RetryPolicy.js"

/** Steps the schedule without sleeping: each `next(input)` is the planned instant (epoch ms) of the next attempt. */
const stepper = (schedule: Schedule.Schedule<Duration.Duration, RetryInput>) =>
  Effect.map(Schedule.toStep(schedule), (step) => ({
    next: (input: RetryInput) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Pull.matchEffect(step(now, input), {
          onSuccess: ([, delay]) => Effect.succeed(Option.some(now + Duration.toMillis(delay))),
          onDone: () => Effect.succeed(Option.none<number>()),
          onFailure: Effect.failCause
        }))
  }))

const start = Date.UTC(2026, 10, 21, 9, 0, 0)
const hour = 3_600_000
const cap = 600_000

/**
 * Plays the schedule like the delivery loop does: at each planned instant (set on TestClock), feed the next input and
 * collect the planned delays until the schedule stops.
 */
const plan = (
  options: { priorAttempts?: number; firstAttemptAt?: number; from?: number },
  inputs?: Array<RetryInput>
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(options.from ?? start)
    const retries = yield* stepper(retryPolicy({ firstAttemptAt: options.firstAttemptAt ?? start, ...options }))
    const delays: Array<number> = []
    let at = options.from ?? start
    for (let i = 0; i < 1_000; i++) {
      const next = yield* retries.next(inputs?.[i] ?? {})
      if (Option.isNone(next)) break
      delays.push(next.value - at)
      at = next.value
      yield* TestClock.setTime(at)
    }
    return { delays, lastAttemptAt: at }
  })

describe("retryPolicy (REFERENCE §4)", () => {
  it.effect("backs off ×2 from 1 s within the jitter bounds, caps each delay at 10 min, stops at first + 4 h", () =>
    Effect.gen(function*() {
      for (let seed = 1; seed <= 4; seed++) {
        const { delays, lastAttemptAt } = yield* plan({}).pipe(Random.withSeed(seed))
        delays.forEach((delay, n) => {
          const nominal = Math.min(1000 * 2 ** n, cap)
          expect(delay).toBeGreaterThanOrEqual(0.8 * nominal)
          expect(delay).toBeLessThanOrEqual(Math.min(1.2 * nominal, cap))
          expect(Number.isInteger(delay)).toBe(true)
        })
        expect(lastAttemptAt).toBeLessThanOrEqual(start + 4 * hour)
        // The next delay (at most 10 min) did not fit: the window is used to its end.
        expect(lastAttemptAt).toBeGreaterThan(start + 4 * hour - cap)
        expect(delays.length).toBeGreaterThanOrEqual(10 + 22)
      }
    }))

  it.effect("continues the backoff of a resumed URL from its attempt count", () =>
    Effect.gen(function*() {
      const five = yield* plan({ priorAttempts: 5 })
      expect(five.delays[0]).toBeGreaterThanOrEqual(0.8 * 32_000)
      expect(five.delays[0]).toBeLessThanOrEqual(1.2 * 32_000)
      expect(five.delays[1]).toBeGreaterThanOrEqual(0.8 * 64_000)
      expect(five.delays[1]).toBeLessThanOrEqual(1.2 * 64_000)
      const many = yield* plan({ priorAttempts: 40 })
      expect(many.delays[0]).toBeGreaterThanOrEqual(0.8 * cap)
      expect(many.delays[0]).toBeLessThanOrEqual(cap)
    }))

  it.effect("keeps the window of the first attempt across a restart", () =>
    Effect.gen(function*() {
      // Restarted 10 s before the window ends, 3 attempts made: the next delay (8 s ± 20 %) fits, the one after it
      // (16 s ± 20 %) does not.
      const { delays, lastAttemptAt } = yield* plan({ priorAttempts: 3, from: start + 4 * hour - 10_000 })
      expect(delays).toHaveLength(1)
      expect(lastAttemptAt).toBeLessThanOrEqual(deadline(start))
      const late = yield* plan({ from: start + 4 * hour + 1 })
      expect(late.delays).toStrictEqual([])
    }))

  it.effect("waits exactly a Retry-After, and the exponent still advances", () =>
    Effect.gen(function*() {
      const { delays } = yield* plan({}, [{}, { retryAfter: Duration.seconds(30) }, {}])
      expect(delays[0]).toBeGreaterThanOrEqual(800)
      expect(delays[0]).toBeLessThanOrEqual(1200)
      expect(delays[1]).toBe(30_000)
      expect(delays[2]).toBeGreaterThanOrEqual(3200)
      expect(delays[2]).toBeLessThanOrEqual(4800)
    }))

  it.effect("waits at least 1 s for Retry-After: 0", () =>
    Effect.gen(function*() {
      const { delays } = yield* plan({}, [{ retryAfter: Duration.zero }])
      expect(delays[0]).toBe(1000)
    }))

  it.effect("makes no more attempts when a Retry-After would start past the window", () =>
    Effect.gen(function*() {
      const { delays } = yield* plan({ from: start + 4 * hour - 60_000 }, [{ retryAfter: Duration.seconds(61) }])
      expect(delays).toStrictEqual([])
      const fits = yield* plan({ from: start + 4 * hour - 60_000 }, [{ retryAfter: Duration.seconds(60) }, {
        retryAfter: Duration.seconds(1)
      }])
      expect(fits.delays).toStrictEqual([60_000])
    }))
})
