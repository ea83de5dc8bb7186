import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { type AnalyticsOptions, ClientStatus, type Outcome, TransportError } from "../../src/client/index.js"
import { ok, type Received, settle, startClient, status } from "./support.js"

const refused = new TransportError({
  reason: "connect ECONNREFUSED 127.0.0.1:8080",
  code: "ECONNREFUSED",
  retryable: true
})

interface Scenario {
  /** Calls a second, all made at the start of each second. */
  readonly rate: number
  readonly seconds: number
  /** The server is down from this second (inclusive)… */
  readonly downFrom: number
  /** …to this one (exclusive). */
  readonly downTo: number
  readonly options?: Partial<AnalyticsOptions>
}

const messageIdOf = (second: number, index: number) => `m-${second}-${index}`

/**
 * Calls at `rate` a second on the TestClock while a fake server is down for a while; every refused
 * request takes 50 ms, so that overlapping probes would show. Returns what happened, after a drain.
 */
const runOutage = (scenario: Scenario) =>
  Effect.gen(function*() {
    let down = false
    // From the moment the client reports the outage, at most one request may be in flight.
    let outageKnown = false
    let inFlightWhileKnown = 0
    let mostInFlightWhileKnown = 0
    const delivered = new Set<number>()
    const { analytics, close, fake, outcomes } = yield* startClient({
      ...scenario.options,
      onStatus: (status) => {
        outageKnown = status._tag === "Unreachable"
      }
    }, (received) => {
      if (!down) {
        delivered.add(received.attempt)
        return Effect.succeed(ok)
      }
      const counted = outageKnown
      if (counted) inFlightWhileKnown++
      mostInFlightWhileKnown = Math.max(mostInFlightWhileKnown, inFlightWhileKnown)
      return Effect.sleep("50 millis").pipe(
        Effect.andThen(Effect.fail(refused)),
        Effect.ensuring(Effect.sync(() => counted && inFlightWhileKnown--))
      )
    })
    const changes: Array<{ readonly status: ClientStatus; readonly at: number }> = []
    let now = 0
    const statusFiber = yield* Effect.forkScoped(
      Stream.runForEach(analytics.status, (status) => Effect.sync(() => changes.push({ status, at: now })))
    )
    // When each outcome was reported (to the second).
    const reportedAt = new Map<Outcome, number>()
    const seen = yield* analytics.subscribe
    yield* Effect.forkScoped(Stream.runForEach(seen, (outcome) => Effect.sync(() => reportedAt.set(outcome, now))))
    yield* settle
    for (let second = 0; second < scenario.seconds; second++) {
      now = second * 1000
      if (second === scenario.downFrom) down = true
      if (second === scenario.downTo) down = false
      for (let index = 0; index < scenario.rate; index++) {
        yield* analytics.track({ userId: `u-${second}`, event: "Tick", messageId: messageIdOf(second, index) })
      }
      yield* TestClock.adjust("1 second")
    }
    for (let second = 0; second < 60; second++) {
      now = (scenario.seconds + second) * 1000
      yield* TestClock.adjust("1 second")
    }
    const stats = yield* analytics.stats
    yield* close
    yield* Fiber.await(statusFiber)
    const deliveredRequests = fake.all.filter((request) => delivered.has(request.attempt))
    return { fake, deliveredRequests, outcomes, changes, reportedAt, stats, mostInFlightWhileKnown }
  })

/** Every call made in the scenario has exactly one outcome; returns the outcome of each message id. */
const oneOutcomeEach = (scenario: Scenario, outcomes: ReadonlyArray<Outcome>) => {
  const byId = new Map<string, Outcome>()
  for (const outcome of outcomes) {
    const messages = outcome._tag === "Dropped" ? [outcome.message] : outcome._tag === "Refused" ? [] : outcome.messages
    for (const message of messages) {
      expect(byId.has(message.messageId), message.messageId).toBe(false)
      byId.set(message.messageId, outcome)
    }
  }
  expect(byId.size).toBe(scenario.rate * scenario.seconds)
  return byId
}

const attemptTimes = (received: ReadonlyArray<Received>) => received.map((request) => request.at)

describe("an outage of the server (TestClock, 50 calls a second)", () => {
  it.effect(
    "30 s down: nothing is lost, one probe at a time, status and stats tell the story",
    () =>
      Effect.gen(function*() {
        const scenario: Scenario = { rate: 50, seconds: 60, downFrom: 8, downTo: 38 }
        const run = yield* runOutage(scenario)
        const byId = oneOutcomeEach(scenario, run.outcomes)
        expect([...byId.values()].every((outcome) => outcome._tag === "Success")).toBe(true)
        expect(run.mostInFlightWhileKnown).toBe(1)
        // Probes during the outage: at most 10 s apart (and the 50 ms each takes).
        const probes = attemptTimes(run.fake.all).filter((at) => at > 8000 && at < 38_000)
        for (let i = 1; i < probes.length; i++) expect(probes[i]! - probes[i - 1]!).toBeLessThanOrEqual(10_050)
        expect(run.changes.map((change) => change.status._tag)).toEqual(["Unreachable", "Reachable"])
        const [unreachable, reachable] = run.changes
        expect(ClientStatus.$is("Unreachable")(unreachable!.status) && unreachable!.status.error).toEqual(refused)
        const back = reachable!.status as Extract<ClientStatus, { _tag: "Reachable" }>
        // Found within the longest probe delay of the restart.
        expect(reachable!.at).toBeGreaterThanOrEqual(38_000)
        expect(reachable!.at).toBeLessThanOrEqual(38_000 + 11_000)
        expect(back.downtimeMillis).toBeGreaterThanOrEqual(30_000)
        // The 30 seconds of calls, less the probe's own batch (delivered just before) and a batch being formed.
        expect(back.held).toBeGreaterThanOrEqual(50 * 30 - 2 * 20)
        expect(back.held).toBeLessThanOrEqual(50 * 41)
        // Past the batches formed before it ended, the backlog goes out in large batches, then batches of flushAt (20).
        const sizes = run.deliveredRequests.filter((request) => request.at >= reachable!.at)
          .map((request) => request.body.batch.length)
        expect(Math.max(...sizes)).toBeGreaterThan(20)
        expect(sizes.at(-1)).toBeLessThanOrEqual(20)
        expect(run.stats).toEqual({ held: 0, delivered: 3000, dropped: 0, failed: 0 })
      }),
    60_000
  )

  it.effect("9 minutes down: nothing is lost with the defaults", () =>
    Effect.gen(function*() {
      const scenario: Scenario = { rate: 50, seconds: 9 * 60 + 30, downFrom: 10, downTo: 10 + 9 * 60 }
      const run = yield* runOutage(scenario)
      const byId = oneOutcomeEach(scenario, run.outcomes)
      expect([...byId.values()].filter((outcome) => outcome._tag !== "Success")).toEqual([])
      expect(run.mostInFlightWhileKnown).toBe(1)
      expect(run.stats.failed).toBe(0)
    }), 120_000)

  it.effect(
    "11 minutes down, retryFor 10 minutes: exactly the calls that waited longer fail, each once",
    () =>
      Effect.gen(function*() {
        const scenario: Scenario = { rate: 50, seconds: 12 * 60, downFrom: 10, downTo: 10 + 11 * 60 }
        const run = yield* runOutage(scenario)
        const byId = oneOutcomeEach(scenario, run.outcomes)
        const retryFor = 10 * 60_000
        // When each message was sent for the last time (its batch's successful attempt).
        const sentAt = new Map<string, number>()
        for (const request of run.deliveredRequests) {
          for (const message of request.body.batch) sentAt.set(message.messageId as string, request.at)
        }
        let failed = 0
        for (const [messageId, outcome] of byId) {
          const second = Number(messageId.split("-")[1])
          const calledAt = second * 1000
          if (outcome._tag === "Success") {
            expect(sentAt.get(messageId)! - calledAt, messageId).toBeLessThanOrEqual(retryFor)
          } else {
            failed++
            expect(outcome._tag === "Failure" && outcome.reason).toBe("RetryForElapsed")
            expect(outcome._tag === "Failure" && outcome.error).toEqual(refused)
            // Reported once it had waited longer than retryFor, and not sent in the meantime.
            expect(run.reportedAt.get(outcome)! - calledAt, messageId).toBeGreaterThan(retryFor - 1000)
            expect(sentAt.has(messageId)).toBe(false)
          }
        }
        // About the first minute of the outage (50 a second), give or take a probe's delay.
        expect(failed).toBeGreaterThanOrEqual(50 * 50)
        expect(failed).toBeLessThanOrEqual(50 * 70)
        expect(run.stats.failed).toBe(failed)
        expect(run.stats.delivered).toBe(scenario.rate * scenario.seconds - failed)
      }),
    120_000
  )

  it.effect("a Retry-After replaces the probe's delay", () =>
    Effect.gen(function*() {
      const { analytics, close, fake, outcomes } = yield* startClient(
        { flushAt: 1 },
        (received) => Effect.succeed(received.attempt <= 2 ? status(503, "20") : ok)
      )
      yield* analytics.track({ userId: "u", event: "e" })
      for (let second = 0; second < 60; second++) yield* TestClock.adjust("1 second")
      expect(attemptTimes(fake.all)).toEqual([0, 20_000, 40_000])
      yield* close
      expect(outcomes).toEqual([expect.objectContaining({ _tag: "Success", attempts: 3 })])
    }))

  it.effect("the byte bound drops the oldest queued messages and reports each", () =>
    Effect.gen(function*() {
      // About 1 KiB a message; the queue holds 32 KiB of them.
      const padding = "x".repeat(1000)
      let down = true
      const { analytics, close, outcomes } = yield* startClient(
        { flushAt: 5, maxInFlight: 1, maxQueueBytes: 32 * 1024 },
        () => Effect.succeed(down ? status(503) : ok)
      )
      for (let index = 0; index < 200; index++) {
        yield* analytics.track({ userId: `u-${index}`, event: "e", properties: { padding } })
        if (index === 0) yield* settle // the first batch goes out and starts the outage
      }
      const dropped = outcomes.filter((outcome) => outcome._tag === "Dropped")
        .map((outcome) => Number(outcome.message.userId!.toString().slice(2)))
      expect(dropped.length).toBeGreaterThan(150)
      expect(dropped).toEqual([...dropped].sort((a, b) => a - b))
      expect((yield* analytics.stats).held).toBe(200 - dropped.length)
      down = false
      for (let second = 0; second < 30; second++) yield* TestClock.adjust("1 second")
      yield* close
      const delivered = outcomes.flatMap((outcome) =>
        outcome._tag === "Success" ? outcome.messages.map((message) => Number(String(message.userId).slice(2))) : []
      )
      // The newest are all delivered; every call has one outcome.
      expect(delivered).toContain(199)
      expect([...delivered, ...dropped].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i))
    }))

  it.effect("closing during an outage waits closeTimeout, then reports the rest as Failure (Closed)", () =>
    Effect.gen(function*() {
      const { analytics, close, outcomes } = yield* startClient(
        { flushAt: 10, closeTimeout: "5 seconds" },
        () => Effect.fail(refused)
      )
      for (let index = 0; index < 100; index++) yield* analytics.track({ userId: `u-${index}`, event: "e" })
      yield* TestClock.adjust("3 seconds")
      const closing = yield* Effect.forkChild(close)
      yield* TestClock.adjust("4999 millis")
      expect(closing.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(closing)
      const failures = outcomes.filter((outcome): outcome is Extract<Outcome, { _tag: "Failure" }> =>
        outcome._tag === "Failure"
      )
      expect(failures.every((failure) => failure.reason === "Closed" && failure.error === refused)).toBe(true)
      expect(failures.flatMap((failure) => failure.messages).length).toBe(100)
      expect(outcomes).toHaveLength(failures.length)
    }))
})
