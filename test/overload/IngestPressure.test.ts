import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Metric } from "effect"
import { TestClock } from "effect/testing"
import { claimsHeldForIngest } from "../../src/metrics/Metrics.js"
import * as IngestPressure from "../../src/overload/IngestPressure.js"
import { commitEvery10Millis, scriptedLoop } from "./support.js"

/** Lets forked fibers run up to their next wait (TestClock does not move). */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

/** The last commit just ended, on a busy loop: ingest counts as saturating for 50 ms more, and no longer. */
const lastSampleOfIngest = (pressure: IngestPressure.IngestPressureShape) =>
  Effect.gen(function*() {
    yield* TestClock.adjust("50 millis")
    expect(yield* pressure.saturated).toBe(true)
    yield* TestClock.adjust("1 millis")
    expect(yield* pressure.saturated).toBe(false)
  })

describe("IngestPressure", () => {
  it.effect("counts as saturated only while the loop is busy past the threshold and ingest commits", () =>
    Effect.gen(function*() {
      const { loop, loopTimes } = scriptedLoop()
      const pressure = yield* IngestPressure.make({ loopTimes })
      // Busy, but nothing ingested: the dispatcher's own work never holds it back.
      loop.busy = 1
      yield* TestClock.adjust("50 millis")
      expect(yield* pressure.saturated).toBe(false)
      const committed = yield* Deferred.make<void>()
      const commit = yield* Effect.forkChild(pressure.ingesting(Deferred.await(committed)))
      yield* settle
      expect(yield* pressure.saturated).toBe(true)
      // Ingesting, but the loop has room (80 % busy under the 85 % threshold).
      loop.busy = 0.8
      yield* TestClock.adjust("50 millis")
      expect(yield* pressure.saturated).toBe(false)
      loop.busy = 0.9
      yield* TestClock.adjust("50 millis")
      expect(yield* pressure.saturated).toBe(true)
      // The commit ends; for one sample (50 ms) more ingest still counts as busy (a sender's next request is on its
      // way), then no longer, however busy the loop.
      yield* Deferred.succeed(committed, undefined)
      yield* Fiber.join(commit)
      yield* lastSampleOfIngest(pressure)
    }))

  it.effect("stops counting a commit that failed or was interrupted", () =>
    Effect.gen(function*() {
      const { loop, loopTimes } = scriptedLoop()
      const pressure = yield* IngestPressure.make({ loopTimes })
      loop.busy = 1
      yield* TestClock.adjust("50 millis")
      expect(yield* Effect.result(pressure.ingesting(Effect.fail("store down")))).toMatchObject({
        _tag: "Failure",
        failure: "store down"
      })
      const stuck = yield* Effect.forkChild(pressure.ingesting(Effect.never))
      yield* settle
      yield* Fiber.interrupt(stuck)
      yield* lastSampleOfIngest(pressure)
    }))

  it.effect("holds a caller while ingest saturates the loop and lets it go within 10 ms of the sample that shows room", () =>
    Effect.gen(function*() {
      const { loop, loopTimes } = scriptedLoop()
      const pressure = yield* IngestPressure.make({ loopTimes })
      // Not saturated: returns at once, without a tick of the clock.
      yield* pressure.yieldToIngest("500 millis")

      loop.busy = 1
      yield* pressure.ingesting(Effect.void)
      yield* TestClock.adjust("50 millis")
      const held = yield* Effect.forkChild(pressure.yieldToIngest("500 millis"))
      yield* commitEvery10Millis(pressure, 10, settle)
      expect(held.pollUnsafe()).toBeUndefined()
      // The loop gets room again (ingest still committing): the sample at +200 ms shows it, the next look lets the
      // caller go.
      loop.busy = 0.5
      yield* TestClock.adjust("49 millis")
      yield* settle
      expect(held.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("11 millis")
      yield* Fiber.join(held)
    }))

  it.effect("lets a caller go after maxHold however long ingest stays saturated", () =>
    Effect.gen(function*() {
      const { loop, loopTimes } = scriptedLoop()
      const pressure = yield* IngestPressure.make({ loopTimes })
      loop.busy = 1
      yield* pressure.ingesting(Effect.void)
      yield* TestClock.adjust("50 millis")
      const held = yield* Effect.forkChild(pressure.yieldToIngest("500 millis"))
      yield* commitEvery10Millis(pressure, 49, settle)
      expect(yield* pressure.saturated).toBe(true)
      expect(held.pollUnsafe()).toBeUndefined()
      const heldBefore = (yield* Metric.value(claimsHeldForIngest)).count
      yield* pressure.ingesting(Effect.void)
      yield* TestClock.adjust("10 millis")
      yield* Fiber.join(held)
      expect(yield* pressure.saturated).toBe(true)
      // /metrics counts the hold.
      expect((yield* Metric.value(claimsHeldForIngest)).count - heldBefore).toBeCloseTo(0.5, 6)
    }))
})
