import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { maxMessageBytes, maxRequestBytes } from "../../src/domain/Limits.js"
import { settle, startClient, trackCall } from "./support.js"

describe("batching", () => {
  it.effect("20 calls make one batch of 20 at once", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      for (let i = 0; i < 20; i++) yield* analytics.track(trackCall(i))
      const received = yield* fake.next
      expect(received.at).toBe(0)
      expect(received.body.batch.map((message) => message.properties.index)).toEqual([...Array(20).keys()])
      yield* settle
      expect(fake.all).toHaveLength(1)
    }))

  it.effect("19 calls are sent as one batch after flushAfter (5 s), not before", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      for (let i = 0; i < 19; i++) yield* analytics.track(trackCall(i))
      yield* TestClock.adjust("4999 millis")
      yield* settle
      expect(fake.all).toHaveLength(0)
      yield* TestClock.adjust("1 millis")
      const received = yield* fake.next
      expect(received.at).toBe(5000)
      expect(received.body.batch).toHaveLength(19)
    }))

  it.effect("flushAfter is measured from the last flush", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient({ flushAt: 3 })
      yield* TestClock.adjust("4 seconds")
      for (let i = 0; i < 3; i++) yield* analytics.track(trackCall(i)) // a full batch at 4 s
      expect((yield* fake.next).at).toBe(4000)
      yield* analytics.track(trackCall(3))
      yield* TestClock.adjust("4999 millis") // 8.999 s: 5 s after 4 s is 9 s
      yield* settle
      expect(fake.all).toHaveLength(1)
      yield* TestClock.adjust("1 millis")
      const late = yield* fake.next
      expect(late.at).toBe(9000)
      expect(late.body.batch).toHaveLength(1)
    }))

  it.effect("flushAt: 1 sends every message alone, and size is its alias", () =>
    Effect.gen(function*() {
      for (const options of [{ flushAt: 1 }, { size: 1 }]) {
        const { analytics, fake } = yield* startClient(options)
        for (let i = 0; i < 3; i++) yield* analytics.track(trackCall(i))
        for (let i = 0; i < 3; i++) expect((yield* fake.next).body.batch.map((m) => m.properties.index)).toEqual([i])
      }
    }))

  it.effect("messages totalling more than 500 KB are split into requests of at most 500 KB", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient({ flushAt: 100 })
      const padding = "x".repeat(30_000)
      for (let i = 0; i < 40; i++) yield* analytics.track({ ...trackCall(i), properties: { index: i, padding } })
      yield* analytics.flush
      expect(fake.all.length).toBeGreaterThan(2)
      for (const received of fake.all) {
        expect(received.bytes).toBeLessThanOrEqual(maxRequestBytes)
        // Full: one more message would not have fitted.
        if (received !== fake.all.at(-1)) expect(received.bytes + 30_200).toBeGreaterThan(maxRequestBytes)
      }
      expect(fake.messages().map((message) => message.properties.index)).toEqual([...Array(40).keys()])
    }))

  it.effect("a message over 32 KiB is refused with MessageTooLarge and nothing is queued", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      const error = yield* Effect.flip(
        analytics.track({ ...trackCall(0), properties: { blob: "x".repeat(33 * 1024) } })
      )
      expect(error._tag).toBe("MessageTooLarge")
      if (error._tag !== "MessageTooLarge") return
      expect(error.size).toBeGreaterThan(maxMessageBytes)
      expect(error.limit).toBe(maxMessageBytes)
      // Just under the limit is fine.
      yield* analytics.track({ ...trackCall(1), properties: { blob: "x".repeat(31 * 1024) } })
      yield* analytics.flush
      expect(fake.messages().map((message) => message.userId)).toEqual(["user-1"])
    }))

  it.effect("flush sends a partial batch at once and waits for its outcome", () =>
    Effect.gen(function*() {
      const { analytics, fake, outcomes } = yield* startClient()
      for (let i = 0; i < 3; i++) yield* analytics.track(trackCall(i))
      yield* analytics.flush
      expect(fake.all).toHaveLength(1)
      expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Success"])
      yield* analytics.flush // nothing queued: returns at once
      expect(fake.all).toHaveLength(1)
    }))
})
