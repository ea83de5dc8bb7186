import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Duration, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { deliver } from "../../src/delivery/Deliver.js"
import type { DeliverOptions, DeliveryJob } from "../../src/delivery/Deliver.js"
import { AllEndpointsFailed, DeliveryResult, EndpointState } from "../../src/delivery/DeliveryResult.js"
import type { Pending } from "../../src/delivery/DeliveryResult.js"
import * as Transport from "../../src/delivery/Transport.js"
import type { TransportFailure, TransportResponse } from "../../src/delivery/Transport.js"
import { adjustUntil, encode, realWait, recorder, startServer, waitUntil } from "./support.js"

const hour = 3_600_000
const A = "https://a.example/hook"
const B = "https://b.example/hook?k=1"

const job = (urls: ReadonlyArray<string>, fields: Partial<DeliveryJob> = {}): DeliveryJob => ({
  jobId: "job-7",
  messageId: "m-7",
  body: encode(`{"type":"track","messageId":"m-7"}`),
  settings: { sharedSecret: "k", endpoints: urls.map((url) => ({ url })) },
  ...fields
})

type Script = (call: number) => Effect.Effect<TransportResponse, TransportFailure>

/** A transport answering each URL from its script (call numbers are per URL, 1-based), with no sockets. */
const scripted = (scripts: Record<string, Script>) => {
  const calls: Record<string, number> = {}
  const layer = Transport.layerTest((request) => {
    const url = `${request.origin}${request.path}`
    calls[url] = (calls[url] ?? 0) + 1
    const script = scripts[url]
    return script === undefined ? Effect.die(new Error(`unexpected request to ${url}`)) : script(calls[url])
  })
  return { calls, layer }
}

const status = (code: number, fields: Partial<Omit<TransportResponse, "status">> = {}) =>
  Effect.succeed(Transport.response(code, fields))

const run = (
  theJob: DeliveryJob,
  scripts: Record<string, Script>,
  options: DeliverOptions = {}
) =>
  Effect.gen(function*() {
    const { records, sink } = recorder()
    const transport = scripted(scripts)
    const fiber = yield* deliver(theJob, { recordAttempt: sink, ...options }).pipe(
      Effect.provide(transport.layer),
      Effect.forkChild
    )
    return { fiber, records, calls: transport.calls }
  })

describe("deliver: one URL under the retry policy (TestClock)", () => {
  it.effect("retries a URL that always answers 500 with growing jittered delays, then gives up at first + 4 h", () =>
    Effect.gen(function*() {
      const { fiber, records } = yield* run(job([A]), { [A]: () => status(500, { snippet: "down" }) })
      yield* TestClock.adjust("5 hours")
      const exit = yield* Fiber.await(fiber)

      const starts = records.map((record) => record.startedAt)
      expect(starts[0]).toBe(0)
      const delays = starts.slice(1).map((at, i) => at - starts[i]!)
      delays.forEach((delay, n) => {
        const nominal = Math.min(1000 * 2 ** n, 600_000)
        expect(delay).toBeGreaterThanOrEqual(0.8 * nominal)
        expect(delay).toBeLessThanOrEqual(Math.min(1.2 * nominal, 600_000))
      })
      expect(Math.max(...delays)).toBeLessThanOrEqual(600_000)
      const last = starts[starts.length - 1]!
      expect(last).toBeLessThanOrEqual(4 * hour)
      expect(last).toBeGreaterThan(4 * hour - 600_000)
      // 10 uncapped delays (1 s … 512 s ≈ 17 min) then capped ones of 8 to 10 min over the remaining ≈ 3 h 43 min.
      expect(records.length).toBeGreaterThanOrEqual(10 + 22 + 1)
      expect(records.length).toBeLessThanOrEqual(10 + 28 + 1)
      records.forEach((record, i) =>
        expect(record).toStrictEqual({
          jobId: "job-7",
          url: A,
          attempt: i + 1,
          startedAt: starts[i],
          durationMs: 0,
          statusCode: 500,
          error: null,
          outcome: "retryable",
          responseSnippet: "down"
        })
      )
      expect(exit).toStrictEqual(Exit.fail(
        new AllEndpointsFailed({
          jobId: "job-7",
          messageId: "m-7",
          firstAttemptAt: 0,
          endpoints: [
            EndpointState.Retired({
              url: A,
              attempts: records.length,
              why: "out-of-window",
              lastOutcome: AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })
            })
          ]
        })
      ))
    }))

  it.effect("waits exactly the Retry-After of a 429 before the next attempt", () =>
    Effect.gen(function*() {
      const { fiber, records } = yield* run(job([A]), {
        [A]: (call) => call === 1 ? status(429, { retryAfter: "30" }) : status(200)
      })
      yield* TestClock.adjust("29999 millis")
      expect(records.map((record) => record.outcome)).toStrictEqual(["retryable"])
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toStrictEqual(DeliveryResult.Delivered({ url: A, status: 200, attempts: 2 }))
      expect(records.map((record) => [record.startedAt, record.statusCode])).toStrictEqual([[0, 429], [30_000, 200]])
    }))

  it.effect("stops after a Retry-After that would start past the window", () =>
    Effect.gen(function*() {
      const { fiber, records } = yield* run(job([A], { firstAttemptAt: 0 }), {
        [A]: () => status(503, { retryAfter: String(5 * 3600) })
      })
      const error = yield* Fiber.join(fiber).pipe(Effect.flip)
      expect(records).toHaveLength(1)
      expect(error.endpoints[0]).toMatchObject({ url: A, attempts: 1, why: "out-of-window" })
    }))
})

describe("deliver: several URLs race", () => {
  it.effect("ends with the first success; a URL that failed permanently does not matter", () =>
    Effect.gen(function*() {
      const { calls, fiber } = yield* run(job([A, B]), {
        [A]: () => status(404),
        [B]: (call) => status(call < 3 ? 500 : 200)
      })
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.join(fiber)).toStrictEqual(DeliveryResult.Delivered({ url: B, status: 200, attempts: 3 }))
      expect(calls).toStrictEqual({ [A]: 1, [B]: 3 })
    }))

  it.effect("fails with every URL's last outcome, in settings order, when all fail permanently", () =>
    Effect.gen(function*() {
      const { fiber } = yield* run(job([A, B]), {
        [A]: (call) => call === 1 ? status(500) : status(410),
        [B]: () => status(301, { location: "https://c.example/" })
      })
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(fiber).pipe(Effect.flip)
      expect(error.endpoints).toStrictEqual([
        EndpointState.Retired({
          url: A,
          attempts: 2,
          why: "permanent",
          lastOutcome: AttemptOutcome.Permanent({ reason: "HTTP 410", status: 410 })
        }),
        EndpointState.Retired({
          url: B,
          attempts: 1,
          why: "permanent",
          lastOutcome: AttemptOutcome.Permanent({
            reason: "HTTP 301 redirect to https://c.example/ (redirects are not followed)",
            status: 301
          })
        })
      ])
      expect(error.message).toBe(
        "message m-7: every endpoint failed: https://a.example/hook: permanent after 2 attempt(s) (HTTP 410); " +
          "https://b.example/hook?k=1: permanent after 1 attempt(s) (HTTP 301 redirect to https://c.example/ " +
          "(redirects are not followed))"
      )
    }))

  it.effect(
    "after B succeeds, A's in-flight request is aborted (real sockets, TestClock) and A gets no more requests",
    () =>
      // Real servers on TestClock: each step waits for the real I/O it depends on (waitUntil, real time) before
      // moving the clock, and the clock moves in small steps because the retry delays are jittered.
      Effect.gen(function*() {
        const a = yield* startServer((_, res, index) => {
          if (index === 0) res.writeHead(500).end()
          // later requests are held open: one is in flight when B succeeds
        })
        const b = yield* startServer((_, res, index) => res.writeHead(index < 2 ? 500 : 200).end())
        const urlA = `${a.url}/a`
        const urlB = `${b.url}/b`
        const { records, sink } = recorder()
        const fiber = yield* deliver(job([urlA, urlB]), { recordAttempt: sink }).pipe(
          Effect.provide(Transport.layer()),
          Effect.forkChild
        )
        yield* waitUntil(() => records.length === 2, "both first attempts are recorded")
        yield* adjustUntil(() => a.requests.length === 2 && b.requests.length === 2, "both URLs are retried")
        yield* adjustUntil(() => b.requests.length === 3, "B is tried a third time")
        const result = yield* Fiber.join(fiber)
        expect(result).toStrictEqual(DeliveryResult.Delivered({ url: urlB, status: 200, attempts: 3 }))
        expect(yield* Clock.currentTimeMillis).toBeLessThan(5_000)

        yield* waitUntil(() => a.requests[1]!.aborted, "A's server saw its held request closed")
        const aborted = records.filter((record) => record.url === urlA && record.outcome === "aborted")
        expect(aborted).toHaveLength(1)
        expect(aborted[0]!.attempt).toBe(2)

        yield* TestClock.adjust("1 hour")
        yield* realWait(50)
        expect(a.requests).toHaveLength(2)
        expect(b.requests).toHaveLength(3)
      })
  )
})

describe("deliver: deferral and resumption", () => {
  it.effect("defers a URL whose next retry is further than maxInlineDelay, then resumes it where it stopped", () =>
    Effect.gen(function*() {
      const first = yield* run(job([A]), { [A]: () => status(500) }, { maxInlineDelay: "10 seconds" })
      // Attempts at 0, 1, 3, 7, 15 s (±20 %, so the fifth by 18 s); the next delay, 16 s ± 20 %, is over 10 s.
      yield* TestClock.adjust("20 seconds")
      const deferred = yield* Fiber.join(first.fiber)
      expect(first.records).toHaveLength(5)
      if (deferred._tag !== "Deferred") throw new Error("expected a deferral")
      const lastStart = first.records[4]!.startedAt
      expect(deferred.firstAttemptAt).toBe(0)
      expect(deferred.nextAttemptAt - lastStart).toBeGreaterThanOrEqual(12_800)
      expect(deferred.nextAttemptAt - lastStart).toBeLessThanOrEqual(19_200)
      expect(deferred.endpoints).toStrictEqual([
        EndpointState.Pending({
          url: A,
          attempts: 5,
          nextAttemptAt: deferred.nextAttemptAt,
          lastOutcome: AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })
        })
      ])

      // Picked up again before its time (it is ≥ 24.8 s, the clock says 20 s), with a small inline budget: deferred
      // again, no attempt made.
      const early = yield* run(
        job([A], { firstAttemptAt: deferred.firstAttemptAt, endpointStates: deferred.endpoints }),
        { [A]: () => status(500) },
        { maxInlineDelay: "1 second" }
      )
      expect(yield* Fiber.join(early.fiber)).toStrictEqual(deferred)
      expect(early.records).toStrictEqual([])

      // At its time: attempt 6, and when it fails the backoff continues from 2^5 s.
      yield* TestClock.setTime(deferred.nextAttemptAt)
      const resumed = yield* run(
        job([A], { firstAttemptAt: deferred.firstAttemptAt, endpointStates: deferred.endpoints }),
        { [A]: (call) => call === 1 ? status(502) : status(200) }
      )
      yield* TestClock.adjust("39 seconds")
      expect(yield* Fiber.join(resumed.fiber)).toStrictEqual(
        DeliveryResult.Delivered({ url: A, status: 200, attempts: 7 })
      )
      expect(resumed.records.map((record) => record.attempt)).toStrictEqual([6, 7])
      expect(resumed.records[0]!.startedAt).toBe(deferred.nextAttemptAt)
      const delay = resumed.records[1]!.startedAt - resumed.records[0]!.startedAt
      expect(delay).toBeGreaterThanOrEqual(0.8 * 32_000)
      expect(delay).toBeLessThanOrEqual(1.2 * 32_000)
    }))

  it.effect("defers the job while one URL is pending, keeping the retired one's state", () =>
    Effect.gen(function*() {
      const { fiber } = yield* run(job([A, B]), { [A]: () => status(400), [B]: () => status(500) }, {
        maxInlineDelay: "0 millis"
      })
      const result = yield* Fiber.join(fiber)
      if (result._tag !== "Deferred") throw new Error("expected a deferral")
      const pending = result.endpoints[1] as Pending
      expect(pending.nextAttemptAt).toBeGreaterThanOrEqual(800)
      expect(pending.nextAttemptAt).toBeLessThanOrEqual(1200)
      expect(result).toStrictEqual(DeliveryResult.Deferred({
        nextAttemptAt: pending.nextAttemptAt,
        firstAttemptAt: 0,
        endpoints: [
          EndpointState.Retired({
            url: A,
            attempts: 1,
            why: "permanent",
            lastOutcome: AttemptOutcome.Permanent({ reason: "HTTP 400", status: 400 })
          }),
          EndpointState.Pending({
            url: B,
            attempts: 1,
            nextAttemptAt: pending.nextAttemptAt,
            lastOutcome: AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })
          })
        ]
      }))
    }))

  it.effect("does not try retired URLs again, and fails at once when every URL is retired", () =>
    Effect.gen(function*() {
      const retiredA = EndpointState.Retired({ url: A, attempts: 3, why: "permanent" })
      const some = yield* run(job([A, B], { endpointStates: [retiredA] }), { [B]: () => status(200) })
      expect(yield* Fiber.join(some.fiber)).toStrictEqual(
        DeliveryResult.Delivered({ url: B, status: 200, attempts: 1 })
      )
      expect(some.calls).toStrictEqual({ [B]: 1 })

      const retiredB = EndpointState.Retired({ url: B, attempts: 9, why: "out-of-window" })
      const none = yield* run(job([A, B], { firstAttemptAt: 0, endpointStates: [retiredB, retiredA] }), {})
      const error = yield* Fiber.join(none.fiber).pipe(Effect.flip)
      expect(error.endpoints).toStrictEqual([retiredA, retiredB])
      expect(none.records).toStrictEqual([])
    }))

  it.effect("makes no attempt when a resumed job comes back after its window", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(4 * hour + 1)
      const prior = EndpointState.Pending({ url: A, attempts: 30, nextAttemptAt: 4 * hour - 5 })
      const { fiber, records } = yield* run(job([A], { firstAttemptAt: 0, endpointStates: [prior] }), {
        [A]: () => status(200)
      })
      const error = yield* Fiber.join(fiber).pipe(Effect.flip)
      expect(records).toStrictEqual([])
      expect(error.endpoints).toStrictEqual([EndpointState.Retired({ url: A, attempts: 30, why: "out-of-window" })])
    }))

  it.effect("sleeps inline until a resumed URL's time when it is within maxInlineDelay", () =>
    Effect.gen(function*() {
      const prior = EndpointState.Pending({ url: A, attempts: 2, nextAttemptAt: 3_000 })
      const { fiber, records } = yield* run(
        job([A], { firstAttemptAt: 0, endpointStates: [prior] }),
        { [A]: () => status(200) },
        { maxInlineDelay: Duration.seconds(5) }
      )
      yield* TestClock.adjust("2999 millis")
      expect(records).toStrictEqual([])
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fiber)).toStrictEqual(DeliveryResult.Delivered({ url: A, status: 200, attempts: 3 }))
      expect(records.map((record) => [record.attempt, record.startedAt])).toStrictEqual([[3, 3_000]])
    }))
})

describe("deliver: a single-URL job after its first attempt (the dispatcher's path)", () => {
  it.effect("a retryable first attempt: the backoff starts at 1 s and the next attempt is number 2", () =>
    Effect.gen(function*() {
      const { calls, fiber, records } = yield* run(job([A], { firstAttemptAt: 0 }), {
        [A]: (call) => call === 1 ? status(503) : status(204)
      })
      yield* TestClock.adjust("1 millis")
      expect(calls[A]).toBe(1)
      yield* TestClock.adjust("798 millis")
      expect(calls[A]).toBe(1)
      yield* TestClock.adjust("401 millis")
      expect(yield* Fiber.join(fiber)).toStrictEqual(DeliveryResult.Delivered({ url: A, status: 204, attempts: 2 }))
      expect(records.map((record) => [record.attempt, record.outcome])).toStrictEqual([
        [1, "retryable"],
        [2, "success"]
      ])
    }))

  it.effect("a permanent first attempt: dead at once, one attempt counted, no second request", () =>
    Effect.gen(function*() {
      const { calls, fiber } = yield* run(job([A], { firstAttemptAt: 0 }), { [A]: () => status(404) })
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      const reasons = Exit.isFailure(exit) ? exit.cause.reasons : []
      const failure = reasons.length === 1 && Cause.isFailReason(reasons[0]!) ? reasons[0].error : undefined
      expect(failure).toBeInstanceOf(AllEndpointsFailed)
      expect(failure?.endpoints).toMatchObject([{ url: A, attempts: 1, why: "permanent" }])
      expect(calls[A]).toBe(1)
    }))

  it.effect("a retryable first attempt with maxInlineDelay zero: deferred to its next attempt time", () =>
    Effect.gen(function*() {
      const { calls, fiber } = yield* run(
        job([A], { firstAttemptAt: 0 }),
        { [A]: () => status(429, { retryAfter: "30" }) },
        { maxInlineDelay: Duration.zero }
      )
      const result = yield* Fiber.join(fiber)
      expect(result).toMatchObject({ _tag: "Deferred", nextAttemptAt: 30_000, firstAttemptAt: 0 })
      expect(calls[A]).toBe(1)
    }))
})
