import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import * as Deadlines from "../../src/runtime/Deadlines.js"

/** Registers `onExpiry` due `millis` from now on the clock; answers the cancel. */
const starter = Effect.gen(function*() {
  const deadlines = yield* Deadlines.make()
  const clock = yield* Clock.Clock
  return (millis: number, onExpiry: () => void) => {
    const entry = { deadline: clock.currentTimeMillisUnsafe() + millis, expire: onExpiry }
    const slot = deadlines.add(entry)
    return () => deadlines.remove(slot, entry)
  }
})

describe("request deadlines kept by one fiber", () => {
  it.effect("each fires once its duration has passed on the clock, unless cancelled; an idle keeper wakes up", () =>
    Effect.gen(function*() {
      const start = yield* starter
      const fired: Array<string> = []
      start(1000, () => fired.push("a")) // due at 1 000
      yield* TestClock.adjust("100 millis")
      const cancelB = start(1000, () => fired.push("b")) // due at 1 100
      yield* TestClock.adjust("100 millis")
      start(1000, () => fired.push("c")) // due at 1 200
      cancelB()
      yield* TestClock.adjust("799 millis") // 999
      expect(fired).toEqual([])
      yield* TestClock.adjust("1 millis") // 1 000
      expect(fired).toEqual(["a"])
      yield* TestClock.adjust("150 millis") // 1 150: b was cancelled
      expect(fired).toEqual(["a"])
      yield* TestClock.adjust("50 millis") // 1 200
      expect(fired).toEqual(["a", "c"])
      yield* TestClock.adjust("1 hour") // idle
      const cancelD = start(1000, () => fired.push("d"))
      start(1000, () => fired.push("e"))
      yield* TestClock.adjust("999 millis")
      cancelD()
      yield* TestClock.adjust("1 millis")
      expect(fired).toEqual(["a", "c", "e"])
    }))

  it.effect("a deadline due sooner than the one the keeper sleeps for wakes it early; a cancel after expiry is ignored", () =>
    Effect.gen(function*() {
      const start = yield* starter
      const fired: Array<string> = []
      start(10_000, () => fired.push("long"))
      yield* TestClock.adjust("1 second")
      const cancelShort = start(500, () => fired.push("short"))
      const cancelOther = start(600, () => fired.push("other"))
      yield* TestClock.adjust("500 millis")
      expect(fired).toEqual(["short"])
      // Its slot may be another's by now: cancelling an expired deadline leaves the others alone.
      cancelShort()
      start(50, () => fired.push("reused")) // due at 1 550, before the 1 600 the keeper sleeps for
      yield* TestClock.adjust("50 millis")
      expect(fired).toEqual(["short", "reused"])
      yield* TestClock.adjust("50 millis")
      expect(fired).toEqual(["short", "reused", "other"])
      cancelOther()
      yield* TestClock.adjust("10 seconds")
      expect(fired).toEqual(["short", "reused", "other", "long"])
    }))
})
