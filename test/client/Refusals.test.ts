import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import type { AnalyticsShape, CallError, Outcome } from "../../src/client/index.js"
import { makeGate, ok, settle, startClient, trackCall } from "./support.js"

// Casts: these calls break the types on purpose, as JavaScript callers can.
const loose = (analytics: AnalyticsShape) =>
  analytics as unknown as {
    readonly [K in "identify" | "track" | "page" | "screen" | "group" | "alias"]: (
      params: unknown
    ) => Effect.Effect<void, CallError>
  }

const refusals = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.flatMap((outcome) =>
    outcome._tag === "Refused"
      ? [[outcome.type, outcome.error._tag, "path" in outcome.error ? outcome.error.path : undefined]]
      : []
  )

/** The call's exit: a refusal must be a typed failure, never a defect. */
const failureOf = (effect: Effect.Effect<void, CallError>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a refusal")
    expect(Cause.hasDies(exit.cause)).toBe(false)
    return Result.getOrThrow(Cause.findError(exit.cause))
  })

describe("refused calls (Effect API)", () => {
  it.effect("are typed failures, whatever the caller passes, and each is a Refused outcome naming the field", () =>
    Effect.gen(function*() {
      const { analytics, close, fake, outcomes } = yield* startClient()
      const calls = loose(analytics)
      const throwing = Object.defineProperty({ event: "e" }, "userId", {
        enumerable: true,
        get: () => {
          throw new Error("boom")
        }
      })
      expect((yield* failureOf(calls.track({ event: "No User" })))._tag).toBe("InvalidMessage")
      expect((yield* failureOf(calls.track(null)))._tag).toBe("InvalidMessage")
      expect((yield* failureOf(calls.identify("u-1")))._tag).toBe("InvalidMessage")
      expect((yield* failureOf(calls.track(throwing)))._tag).toBe("InvalidMessage")
      const large = yield* failureOf(analytics.track({ ...trackCall(0), properties: { blob: "x".repeat(33 * 1024) } }))
      expect(large).toMatchObject({ _tag: "MessageTooLarge", path: "properties" })
      yield* analytics.track(trackCall(1))
      yield* close
      expect(refusals(outcomes)).toStrictEqual([
        ["track", "InvalidMessage", "userId"],
        ["track", "InvalidMessage", ""],
        ["identify", "InvalidMessage", ""],
        ["track", "InvalidMessage", ""],
        ["track", "MessageTooLarge", "properties"]
      ])
      expect(fake.messages().map((message) => message.userId)).toStrictEqual(["user-1"])
    }))

  it.effect("forked and never joined, a refused call is still heard by onOutcome; the calls around it are sent", () =>
    Effect.gen(function*() {
      const { analytics, close, fake, outcomes } = yield* startClient()
      yield* Effect.forkChild(analytics.track(trackCall(0)))
      yield* Effect.forkChild(loose(analytics).track({ event: "No User" }))
      yield* Effect.forkChild(analytics.track(trackCall(1)))
      yield* settle
      yield* close
      yield* Effect.forkChild(analytics.track(trackCall(2)))
      yield* settle
      expect(refusals(outcomes)).toStrictEqual([["track", "InvalidMessage", "userId"], [
        "track",
        "ClientClosed",
        undefined
      ]])
      expect(fake.messages().map((message) => message.userId)).toStrictEqual(["user-0", "user-1"])
    }))
})

describe("fields are kept or refused", () => {
  it.effect("page: traits are the page's properties, delivered under properties", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient()
      const page = { url: "https://example.com/pricing", title: "Pricing" }
      yield* analytics.page({ userId: "u", name: "Pricing", traits: page })
      yield* analytics.page({ userId: "u", traits: page, properties: { ...page } }) // the same: fine
      yield* close
      const [first, second] = fake.messages()
      expect(first).toMatchObject({ type: "page", name: "Pricing", properties: page })
      expect(first!.traits).toBeUndefined()
      expect(second).toMatchObject({ properties: page })
      expect(second!.traits).toBeUndefined()
    }))

  it.effect("page: traits and properties with different contents, or traits not an object, are refused", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient()
      const both = yield* failureOf(analytics.page({ userId: "u", traits: { url: "a" }, properties: { url: "b" } }))
      expect(both).toMatchObject({ _tag: "InvalidMessage", path: "traits" })
      expect(both.message).toMatch(/traits or properties/)
      expect(yield* failureOf(loose(analytics).page({ userId: "u", traits: "x" }))).toMatchObject({ path: "traits" })
      yield* close
      expect(fake.all).toHaveLength(0)
    }))

  it.effect("a field a call does not take is refused, named; absent values (null, undefined) are not fields", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient()
      const calls = loose(analytics)
      const unknownOf = (effect: Effect.Effect<void, CallError>) =>
        Effect.map(failureOf(effect), (error) => (error._tag === "InvalidMessage" ? error.path : error._tag))
      expect(yield* unknownOf(calls.track({ userId: "u", event: "e", traits: { a: 1 } }))).toBe("traits")
      expect(yield* unknownOf(calls.identify({ userId: "u", properties: { a: 1 } }))).toBe("properties")
      expect(yield* unknownOf(calls.screen({ userId: "u", traits: { a: 1 } }))).toBe("traits")
      expect(yield* unknownOf(calls.group({ userId: "u", groupId: "g", properties: { a: 1 } }))).toBe("properties")
      expect(yield* unknownOf(calls.alias({ userId: "u", previousId: "p", event: "e" }))).toBe("event")
      expect(yield* unknownOf(calls.track({ userId: "u", event: "e", sentAt: "2020-01-01T00:00:00Z" }))).toBe("sentAt")
      // Kept: an alias's anonymousId is delivered; absent values are dropped as absent.
      yield* analytics.alias({ userId: "u", previousId: "p", anonymousId: "a" })
      yield* calls.track({ userId: "u", event: "e", traits: undefined, channel: null })
      yield* close
      expect(fake.messages()).toMatchObject([
        { type: "alias", userId: "u", previousId: "p", anonymousId: "a" },
        { type: "track", userId: "u", event: "e" }
      ])
    }))
})

describe("flush and close, several times and at once", () => {
  it.effect("right after make, concurrently: every flush completes once the calls before it have their outcome", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake } = yield* startClient(
        { flushAt: 20, flushAfter: 60_000, maxInFlight: 1 },
        () => Effect.as(gate.wait, ok)
      )
      const empty = yield* Effect.forkChild(analytics.flush)
      for (let i = 0; i < 3; i++) yield* analytics.track(trackCall(i))
      const flushes = yield* Effect.forkChild(
        Effect.all([analytics.flush, analytics.flush, analytics.flush], { concurrency: "unbounded" })
      )
      yield* settle
      // The first batch is held at the gate: no flush after the calls is done, and no timer ran.
      expect(flushes.pollUnsafe()).toBeUndefined()
      yield* gate.open
      yield* Fiber.join(flushes)
      yield* Fiber.join(empty)
      expect(fake.all.map((received) => received.body.batch.length)).toStrictEqual([3])
      yield* close
    }))

  it.effect("a flush waiting when the client closes completes with the close", () =>
    Effect.gen(function*() {
      const gate = yield* makeGate
      const { analytics, close, fake } = yield* startClient({ flushAt: 5, maxInFlight: 1 }, () =>
        Effect.as(gate.wait, ok))
      for (let i = 0; i < 7; i++) {
        yield* analytics.track(trackCall(i))
      }
      const flush = yield* Effect.forkChild(analytics.flush)
      const closing = yield* Effect.forkChild(close)
      yield* settle
      yield* gate.open
      yield* Fiber.join(closing)
      yield* Fiber.join(flush)
      expect(fake.all.map((received) =>
        received.body.batch.length
      )).toStrictEqual([5, 2])
    }))

  it.effect("the flush timer still sends after flushAfter when nobody flushes", () =>
    Effect.gen(function*() {
      const { analytics, close, fake } = yield* startClient({ flushAt: 20, flushAfter: 60_000 })
      for (let i = 0; i < 3; i++) yield* analytics.track(trackCall(i))
      yield* TestClock.adjust("59 seconds")
      yield* settle
      expect(fake.all).toHaveLength(0)
      yield* TestClock.adjust("1 second")
      yield* settle
      expect(fake.all.map((received) => received.body.batch.length)).toStrictEqual([3])
      yield* close
    }))
})
