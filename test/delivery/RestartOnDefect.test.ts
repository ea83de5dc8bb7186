import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import { restartOnDefect } from "../../src/delivery/Dispatcher.js"

describe("the dispatcher's background loops (TestClock)", () => {
  it.effect("a loop that dies of a defect is started again a second later, and keeps running", () =>
    Effect.gen(function*() {
      const starts = yield* Ref.make(0)
      const ticks = yield* Ref.make(0)
      // Dies on its first two starts (as a dropped connection inside a transaction did), then runs for good.
      const loop = Effect.gen(function*() {
        const start = yield* Ref.updateAndGet(starts, (n) => n + 1)
        if (start <= 2) return yield* Effect.die(new Error(`connection closed (start ${start})`))
        return yield* Effect.forever(Effect.andThen(Ref.update(ticks, (n) => n + 1), Effect.sleep("100 millis")))
      })
      const fiber = yield* Effect.forkChild(restartOnDefect("the loop", loop))
      yield* TestClock.adjust("500 millis")
      expect(yield* Ref.get(starts)).toBe(1)
      yield* TestClock.adjust("1 second")
      expect(yield* Ref.get(starts)).toBe(2)
      yield* TestClock.adjust("1 second")
      expect(yield* Ref.get(starts)).toBe(3)
      yield* TestClock.adjust("1 second")
      expect(yield* Ref.get(ticks)).toBeGreaterThanOrEqual(9)
      expect(yield* Ref.get(starts)).toBe(3)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("an interruption ends the loop without a restart", () =>
    Effect.gen(function*() {
      const starts = yield* Ref.make(0)
      const fiber = yield* Effect.forkChild(
        restartOnDefect("the loop", Effect.andThen(Ref.update(starts, (n) => n + 1), Effect.never))
      )
      yield* TestClock.adjust("10 millis")
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust("5 seconds")
      expect(yield* Ref.get(starts)).toBe(1)
    }))
})
