import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import { parseRetryAfter } from "../../src/client/ClientRetry.js"
import { maxRetryAfter, type Outcome, TransportError } from "../../src/client/index.js"
import { makeGate, ok, type Responder, settle, startClient, status, trackCall } from "./support.js"

const byAttempt = (answers: ReadonlyArray<ReturnType<typeof status>>): Responder => (received) =>
  Effect.succeed(answers[received.attempt - 1] ?? answers.at(-1)!)

const failure = (outcomes: ReadonlyArray<Outcome>) => {
  const [outcome] = outcomes
  if (outcomes.length !== 1 || outcome?._tag !== "Failure") {
    throw new Error(`expected one Failure, got ${outcomes.map((o) => o._tag).join(", ")}`)
  }
  return outcome
}

describe("Retry-After", () => {
  it("reads delay-seconds and HTTP dates, capped at maxRetryAfter", () => {
    const now = Date.parse("2026-11-21T09:00:00Z")
    expect(parseRetryAfter("7", now)).toBe(7000)
    expect(parseRetryAfter(" 0 ", now)).toBe(0)
    expect(parseRetryAfter("Sat, 21 Nov 2026 09:00:30 GMT", now)).toBe(30_000)
    expect(parseRetryAfter("Sat, 21 Nov 2026 08:00:00 GMT", now)).toBe(0)
    expect(parseRetryAfter("86400", now)).toBe(Duration.toMillis(maxRetryAfter))
    expect(parseRetryAfter("soon", now)).toBeUndefined()
    expect(parseRetryAfter(undefined, now)).toBeUndefined()
  })
})

describe("retries", () => {
  it.effect("503 twice then 200: delivered on the third try, after growing jittered delays", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient(
        { flushAt: 1 },
        byAttempt([status(503), status(503), ok])
      )
      yield* analytics.track(trackCall(0))
      const first = yield* fake.next
      expect(first.at).toBe(0)
      // First retry after 1 s ± 20 %, second after 2 s ± 20 %.
      yield* TestClock.adjust("799 millis")
      yield* settle
      expect(fake.all).toHaveLength(1)
      yield* TestClock.adjust("401 millis")
      const second = yield* fake.next
      expect(second.at).toBeGreaterThanOrEqual(800)
      expect(second.at).toBeLessThanOrEqual(1200)
      yield* TestClock.adjust("2400 millis")
      const third = yield* fake.next
      expect(third.at - second.at).toBeGreaterThanOrEqual(1600)
      expect(third.at - second.at).toBeLessThanOrEqual(2400)
      expect(third.at - second.at).toBeGreaterThan(second.at - first.at)
      // The same messages each time, with the attempt's own sentAt.
      expect(third.body.batch).toEqual(first.body.batch)
      expect(Date.parse(third.body.sentAt)).toBe(Math.floor(third.at))
      yield* settle
      expect(outcomes).toEqual([expect.objectContaining({ _tag: "Success", attempts: 3 })])
      expect(fake.all).toHaveLength(3)
    }))

  it.effect("503 forever: probed until its messages pass retryFor, then reported failed once with them", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient(
        { flushAt: 2, retryFor: "1 minute" },
        byAttempt([status(503)])
      )
      yield* analytics.track(trackCall(0))
      yield* analytics.track(trackCall(1))
      for (let second = 0; second < 120; second++) yield* TestClock.adjust("1 second")
      yield* settle
      // Probes at about 1, 3, 7, 15, 25, 35… s (doubling, at most 10 s apart), none past the minute.
      const times = fake.all.map((received) => received.at)
      expect(times.length).toBeGreaterThanOrEqual(6)
      expect(Math.max(...times)).toBeLessThan(60_000)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThanOrEqual(10_000)
      const outcome = failure(outcomes)
      expect(outcome.reason).toBe("RetryForElapsed")
      expect(outcome.status).toBe(503)
      expect(outcome.attempts).toBe(fake.all.length)
      expect(outcome.error._tag).toBe("HttpError")
      expect(outcome.messages.map((message) => message.userId)).toEqual(["user-0", "user-1"])
      expect(outcome.messages.map((message) => message.messageId)).toEqual(
        fake.all[0]!.body.batch.map((message) => message.messageId)
      )
    }))

  it.effect("maxRetries caps the attempts made while the server is reachable; probes do not count", () =>
    Effect.gen(function*() {
      const answers = new Map<string, number>()
      const gate = yield* makeGate
      // Both in flight, both fail; user-0 (the oldest) probes and succeeds, then user-1 is sent again and fails.
      const { analytics, fake, outcomes } = yield* startClient(
        { flushAt: 1, maxInFlight: 2, maxRetries: 1 },
        (received) => {
          const userId = received.body.batch[0]!.userId as string
          const seen = (answers.get(userId) ?? 0) + 1
          answers.set(userId, seen)
          const answer = Effect.succeed(userId === "user-0" && seen > 1 ? ok : status(503))
          return received.attempt <= 2 ? Effect.andThen(gate.wait, answer) : answer
        }
      )
      yield* analytics.track(trackCall(0))
      yield* analytics.track(trackCall(1))
      yield* fake.next
      yield* fake.next
      yield* gate.open
      yield* TestClock.adjust("1 minute")
      yield* settle
      expect(fake.all.map((received) => received.body.batch[0]!.userId)).toEqual([
        "user-0",
        "user-1",
        "user-0",
        "user-1"
      ])
      expect(outcomes).toEqual([
        expect.objectContaining({ _tag: "Success", attempts: 2 }),
        expect.objectContaining({ _tag: "Failure", reason: "RetriesExhausted", attempts: 2, status: 503 })
      ])
    }))

  it.effect("maxRetries: 0 makes one attempt", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient({ flushAt: 1, maxRetries: 0 }, byAttempt([status(500)]))
      yield* analytics.track(trackCall(0))
      yield* TestClock.adjust("1 minute")
      yield* settle
      expect(fake.all).toHaveLength(1)
      expect(failure(outcomes).attempts).toBe(1)
    }))

  it.effect("400 is not retried", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient({ flushAt: 1 }, byAttempt([status(400), ok]))
      yield* analytics.track(trackCall(0))
      yield* fake.next
      yield* TestClock.adjust("1 minute")
      yield* settle
      expect(fake.all).toHaveLength(1)
      const outcome = failure(outcomes)
      expect(outcome.status).toBe(400)
      expect(outcome.reason).toBe("Rejected")
      expect(outcome.error.message).toContain("status_400")
    }))

  it.effect("429 with Retry-After: 7 is retried at 7 s", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient({ flushAt: 1 }, byAttempt([status(429, "7"), ok]))
      yield* analytics.track(trackCall(0))
      yield* fake.next
      yield* TestClock.adjust("6999 millis")
      yield* settle
      expect(fake.all).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      expect((yield* fake.next).at).toBe(7000)
      yield* settle
      expect(outcomes).toEqual([expect.objectContaining({ _tag: "Success", attempts: 2 })])
    }))

  it.effect("a request without an answer times out after `timeout` and is retried", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient(
        { flushAt: 1, timeout: "2 seconds", maxRetries: 1 },
        (received) => received.attempt === 1 ? Effect.never : Effect.succeed(ok)
      )
      yield* analytics.track(trackCall(0))
      yield* fake.next
      yield* TestClock.adjust("1999 millis")
      yield* settle
      expect(fake.all).toHaveLength(1)
      yield* TestClock.adjust("1 millis") // timed out at 2 s; retried ~1 s later
      yield* TestClock.adjust("1200 millis")
      const retry = yield* fake.next
      expect(retry.at).toBeGreaterThanOrEqual(2800)
      yield* settle
      expect(outcomes).toEqual([expect.objectContaining({ _tag: "Success", attempts: 2 })])
    }))

  it.effect("network errors are retried; a permanent transport error is not", () =>
    Effect.gen(function*() {
      const reset = new TransportError({ reason: "socket hang up", code: "ECONNRESET", retryable: true })
      const badCertificate = new TransportError({
        reason: "self-signed",
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
        retryable: false
      })
      const flaky = yield* startClient({ flushAt: 1 }, (received) =>
        received.attempt === 1 ? Effect.fail(reset) : Effect.succeed(ok))
      yield* flaky.analytics.track(trackCall(0))
      yield* TestClock.adjust("2 seconds")
      yield* settle
      expect(flaky.outcomes).toEqual([expect.objectContaining({ _tag: "Success", attempts: 2 })])

      const broken = yield* startClient({ flushAt: 1 }, () =>
        Effect.fail(badCertificate))
      yield* broken.analytics.track(trackCall(0))
      yield* TestClock.adjust("1 minute")
      yield* settle
      const outcome = failure(broken.outcomes)
      expect(outcome.error).toBe(badCertificate)
      expect(outcome.status).toBeUndefined()
      expect(broken.fake.all).toHaveLength(1)
    }))
})
