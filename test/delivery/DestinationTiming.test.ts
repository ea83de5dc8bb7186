import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { deliver } from "../../src/delivery/Deliver.js"
import type { DeliveryJob } from "../../src/delivery/Deliver.js"
import { AllEndpointsFailed } from "../../src/delivery/DeliveryResult.js"
import * as Transport from "../../src/delivery/Transport.js"
import { encode, realWait, recorder, startServer, waitUntil } from "./support.js"

const minute = 60_000
const A = "https://a.example/hook"

const job = (url: string, settings: Partial<DeliveryJob["settings"]> = {}): DeliveryJob => ({
  jobId: "job-1",
  messageId: "m-1",
  body: encode(`{"type":"track","messageId":"m-1"}`),
  settings: { endpoints: [{ url }], ...settings }
})

describe("deliver: a destination's retry window and deadline (REFERENCE §1a, §4)", () => {
  it.effect("retries within the destination's window and dead-letters at its end", () =>
    Effect.gen(function*() {
      const { records, sink } = recorder()
      const timeouts: Array<number | undefined> = []
      const fiber = yield* deliver(job(A, { retryWindow: "10 minutes" }), { recordAttempt: sink }).pipe(
        Effect.provide(Transport.layerTest((request) => {
          timeouts.push(request.timeoutMillis)
          return Effect.succeed(Transport.response(503))
        })),
        Effect.forkChild
      )
      yield* TestClock.adjust("11 minutes")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(exit.cause.reasons[0]).toMatchObject({ error: expect.any(AllEndpointsFailed) })
      const starts = records.map((record) => record.startedAt)
      // 1 s, 2 s, … 256 s: the ninth retry would start after first + 10 min.
      expect(starts[starts.length - 1]).toBeLessThanOrEqual(10 * minute)
      expect(starts[starts.length - 1]).toBeGreaterThan(4 * minute)
      expect(records.length).toBeGreaterThanOrEqual(8)
      expect(records.length).toBeLessThanOrEqual(10)
      // No deadline of its own: the transport's (5 s) applies.
      expect(new Set(timeouts)).toStrictEqual(new Set([undefined]))
    }))

  it.effect("gives each request the destination's deadline instead of the transport's 5 s", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => {})
      const { records, sink } = recorder()
      const url = `${server.url}/slow`
      const fiber = yield* deliver(job(url, { timeout: "2 seconds" }), { recordAttempt: sink }).pipe(
        Effect.provide(Transport.layer()),
        Effect.forkChild
      )
      yield* waitUntil(() => server.requests.length === 1, "the receiver holds the first request")
      yield* TestClock.adjust("1999 millis")
      yield* realWait(20)
      expect(records).toStrictEqual([])
      yield* TestClock.adjust("1 millis")
      yield* waitUntil(() => records.length === 1, "the timed-out attempt is recorded")
      expect(records[0]).toMatchObject({
        attempt: 1,
        durationMs: 2000,
        error: "timeout: no complete response within 2s (waiting for the response)",
        outcome: "retryable"
      })
      yield* Fiber.interrupt(fiber)
    }))
})
