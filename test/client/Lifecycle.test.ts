import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { type Outcome } from "../../src/client/index.js"
import { makeGate, ok, settle, startClient, trackCall } from "./support.js"

const tags = (outcomes: ReadonlyArray<Outcome>) => outcomes.map((outcome) => outcome._tag)
const userIdsOf = (outcomes: ReadonlyArray<Outcome>, tag: "Success" | "Dropped") =>
  outcomes.flatMap((outcome) =>
    outcome._tag === "Dropped" && tag === "Dropped"
      ? [outcome.message.userId]
      : outcome._tag === "Success" && tag === "Success"
      ? outcome.messages.map((message) => message.userId)
      : []
  )

describe("queue full", () => {
  it.effect("overflow: drop, dropPolicy: oldest (the default) — the oldest queued make room, each reported dropped", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake, outcomes } = yield* startClient(
        { maxQueueSize: 10, flushAt: 5, maxInFlight: 1 },
        () => Effect.as(gate.wait, ok)
      )
      // In one go, without yielding: the batcher has no chance to take from the queue.
      for (let i = 0; i < 15; i++) yield* analytics.track(trackCall(i)) // no call fails
      const dropped = userIdsOf(outcomes, "Dropped")
      expect(dropped.length).toBeGreaterThanOrEqual(1)
      expect(dropped.length).toBeLessThanOrEqual(5)
      yield* gate.open
      yield* close
      const delivered = userIdsOf(outcomes, "Success")
      // The newest ten are all delivered; what went is older, in order, and every call has one outcome.
      expect(delivered.slice(-10)).toEqual(Array.from({ length: 10 }, (_, i) => `user-${5 + i}`))
      expect([...dropped, ...delivered].sort()).toEqual(Array.from({ length: 15 }, (_, i) => `user-${i}`).sort())
      expect(dropped).toEqual([...dropped].sort((a, b) => Number(a!.slice(5)) - Number(b!.slice(5))))
      expect(fake.messages()).toHaveLength(15 - dropped.length)
    }))

  it.effect("overflow: drop, dropPolicy: newest — the overflowing messages are reported dropped, the rest delivered", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake, outcomes } = yield* startClient(
        { maxQueueSize: 10, flushAt: 5, maxInFlight: 1, dropPolicy: "newest" },
        () => Effect.as(gate.wait, ok)
      )
      // In one go, without yielding: the batcher has no chance to take from the queue.
      for (let i = 0; i < 15; i++) yield* analytics.track(trackCall(i)) // no call fails
      const dropped = userIdsOf(outcomes, "Dropped")
      expect(dropped.length).toBeGreaterThanOrEqual(1)
      expect(dropped.length).toBeLessThanOrEqual(5)
      const accepted = 15 - dropped.length
      expect(dropped).toEqual(Array.from({ length: dropped.length }, (_, i) => `user-${accepted + i}`))
      yield* gate.open
      yield* close
      expect(userIdsOf(outcomes, "Success")).toEqual(Array.from({ length: accepted }, (_, i) => `user-${i}`))
      expect(fake.messages()).toHaveLength(accepted)
    }))

  it.effect("overflow: backpressure — calls wait for room and nothing is dropped", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake, outcomes } = yield* startClient(
        { maxQueueSize: 2, flushAt: 2, maxInFlight: 1, overflow: "backpressure" },
        () => Effect.as(gate.wait, ok)
      )
      const calls = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 12 }, (_, i) => i), (i) => analytics.track(trackCall(i)))
      )
      yield* settle
      expect(calls.pollUnsafe()).toBeUndefined() // waiting for room
      yield* gate.open
      yield* Fiber.join(calls)
      yield* close
      expect(tags(outcomes).every((tag) => tag === "Success")).toBe(true)
      expect(fake.messages().map((message) => message.userId)).toEqual(
        Array.from({ length: 12 }, (_, i) => `user-${i}`)
      )
    }))
})

describe("close", () => {
  it.effect("flushes everything queued, waits for the batches in flight, then refuses calls", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake, outcomes } = yield* startClient(
        { flushAt: 5, maxInFlight: 1 },
        () => Effect.as(gate.wait, ok)
      )
      const stream = yield* Effect.forkChild(Stream.runCollect(analytics.outcomes))
      yield* settle
      for (let i = 0; i < 12; i++) yield* analytics.track(trackCall(i))
      yield* fake.next // the first batch is in flight, held at the gate
      const closing = yield* Effect.forkChild(close)
      yield* settle
      expect(closing.pollUnsafe()).toBeUndefined() // waits for the batch in flight
      expect((yield* Effect.flip(analytics.track(trackCall(99))))._tag).toBe("ClientClosed")
      yield* gate.open
      yield* Fiber.join(closing)
      // No timer was needed: the partial batch of 2 went out at close.
      expect(fake.all.map((received) => received.body.batch.length)).toEqual([5, 5, 2])
      expect(userIdsOf(outcomes, "Success")).toEqual(Array.from({ length: 12 }, (_, i) => `user-${i}`))
      expect((yield* Effect.flip(analytics.track(trackCall(100))))._tag).toBe("ClientClosed")
      expect((yield* Effect.flip(analytics.flush))._tag).toBe("ClientClosed")
      // The outcome stream ended with the client, after every outcome (the refusal while closing
      // included; the ones after close reach only onOutcome).
      expect(tags(yield* Fiber.join(stream))).toEqual(["Refused", "Success", "Success", "Success"])
      expect(tags(outcomes)).toEqual(["Refused", "Success", "Success", "Success", "Refused"])
      expect(yield* Stream.runCollect(analytics.outcomes)).toEqual([])
    }))

  it.effect("sends what is queued at close without waiting for flushAfter", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient()
      yield* analytics.identify({ userId: "u" })
      yield* close
      expect(fake.messages()).toHaveLength(1)
    }))

  it.effect("waits for a batch that is being retried", () =>
    Effect.gen(function*() {
      const { analytics, close, fake, outcomes } = yield* startClient(
        { flushAt: 1 },
        (received) => Effect.succeed(received.attempt === 1 ? { status: 502, retryAfter: undefined, body: "" } : ok)
      )
      yield* analytics.track(trackCall(0))
      yield* fake.next
      const closing = yield* Effect.forkChild(close)
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(closing)
      expect(tags(outcomes)).toEqual(["Success"])
    }))
})

describe("concurrency", () => {
  it.effect("1 000 fibers × 10 calls: exactly 10 000 messages received, none twice", () =>
    Effect.gen(function*() {
      const { analytics, close, fake, outcomes } = yield* startClient()
      yield* Effect.forEach(
        Array.from({ length: 1000 }, (_, fiber) => fiber),
        (fiber) =>
          Effect.forEach(Array.from({ length: 10 }, (_, call) => call), (call) =>
            analytics.track(trackCall(fiber * 10 + call))),
        { concurrency: "unbounded", discard: true }
      )
      yield* close
      const messages = fake.messages()
      expect(messages).toHaveLength(10_000)
      expect(
        new Set(messages.map((message) =>
          message.messageId
        )).size
      ).toBe(10_000)
      expect(new Set(messages.map((message) => message.properties.index)).size).toBe(10_000)
      expect(tags(outcomes).every((tag) => tag === "Success")).toBe(true)
      expect(fake.all.every((received) => received.body.batch.length <= 20)).toBe(true)
    }))

  it.effect("at most maxInFlight batches are sent at once", () =>
    Effect.gen(function*() {
      let inFlight = 0
      let peak = 0
      const { analytics, close, fake } = yield* startClient(
        { flushAt: 1, maxInFlight: 3 },
        () =>
          Effect.gen(function*() {
            inFlight++
            peak = Math.max(peak, inFlight)
            yield* Effect.sleep("1 second")
            inFlight--
            return ok
          })
      )
      for (let i = 0; i < 10; i++) yield* analytics.track(trackCall(i))
      const closing = yield* Effect.forkChild(close)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(closing)
      expect(peak).toBe(3)
      expect(fake.all).toHaveLength(10)
    }))
})
