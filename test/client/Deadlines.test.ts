import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { TestClock } from "effect/testing"
import { makeDeadlines } from "../../src/client/Deadlines.js"

describe("request deadlines kept by one fiber", () => {
  it.effect("each fires once its duration has passed on the clock, unless cancelled; an idle keeper wakes up", () =>
    Effect.gen(function*() {
      const deadlines = yield* makeDeadlines("1 second")
      const fired: Array<string> = []
      deadlines.start(() => fired.push("a")) // due at 1 000
      yield* TestClock.adjust("100 millis")
      const cancelB = deadlines.start(() => fired.push("b")) // due at 1 100
      yield* TestClock.adjust("100 millis")
      deadlines.start(() => fired.push("c")) // due at 1 200
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
      const cancelD = deadlines.start(() => fired.push("d"))
      deadlines.start(() => fired.push("e"))
      yield* TestClock.adjust("999 millis")
      cancelD()
      yield* TestClock.adjust("1 millis")
      expect(fired).toEqual(["a", "c", "e"])
    }))
})
