import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { readFileSync } from "node:fs"
import { type AnalyticsShape, type CallError, version } from "../../src/client/index.js"
import { startClient } from "./support.js"

const refused = (effect: Effect.Effect<void, CallError>) =>
  Effect.map(Effect.flip(effect), (error) => {
    if (error._tag !== "InvalidMessage") throw new Error(`expected InvalidMessage, got ${error._tag}`)
    return { path: error.path, paths: error.issues.map((issue) => issue.path), text: error.message }
  })

// Casts: these calls break the types on purpose, as JavaScript callers can.
const loose = (analytics: AnalyticsShape) =>
  analytics as unknown as {
    readonly [K in "identify" | "track" | "page" | "screen" | "group" | "alias"]: (
      params: unknown
    ) => Effect.Effect<void, CallError>
  }

describe("validation (REFERENCE §2 rules, the domain's schemas)", () => {
  it.effect("identify, track, page, screen and group need userId or anonymousId", () =>
    Effect.gen(function*() {
      const { analytics } = yield* startClient()
      const calls = loose(analytics)
      for (const call of [calls.identify, calls.page, calls.screen]) {
        expect((yield* refused(call({ traits: {} }))).path).toBe("userId")
      }
      expect((yield* refused(calls.track({ event: "Signed Up" }))).path).toBe("userId")
      expect((yield* refused(calls.group({ groupId: "g" }))).path).toBe("userId")
      expect((yield* refused(calls.track({ userId: "", event: "Signed Up" }))).path).toBe("userId")
    }))

  it.effect("track needs a non-empty event", () =>
    Effect.gen(function*() {
      const { analytics } = yield* startClient()
      const missing = yield* refused(loose(analytics).track({ userId: "u" }))
      expect(missing.path).toBe("event")
      expect(missing.text).toMatch(/^invalid track call: event: /)
      expect((yield* refused(analytics.track({ userId: "u", event: "" }))).path).toBe("event")
    }))

  it.effect("group needs groupId; alias needs previousId and userId", () =>
    Effect.gen(function*() {
      const { analytics } = yield* startClient()
      const calls = loose(analytics)
      expect((yield* refused(calls.group({ userId: "u" }))).path).toBe("groupId")
      expect((yield* refused(calls.alias({ userId: "u" }))).path).toBe("previousId")
      expect((yield* refused(calls.alias({ previousId: "anon" }))).path).toBe("userId")
    }))

  it.effect("timestamps must be ISO 8601; properties, traits, context and integrations must be objects", () =>
    Effect.gen(function*() {
      const { analytics } = yield* startClient()
      const calls = loose(analytics)
      expect((yield* refused(calls.track({ userId: "u", event: "e", timestamp: "yesterday" }))).path).toBe("timestamp")
      expect((yield* refused(calls.track({ userId: "u", event: "e", timestamp: new Date(Number.NaN) }))).path)
        .toBe("timestamp")
      expect((yield* refused(calls.track({ userId: "u", event: "e", properties: "x" }))).path).toBe("properties")
      expect((yield* refused(calls.identify({ userId: "u", traits: [1] }))).path).toBe("traits")
      expect((yield* refused(calls.identify({ userId: "u", context: 1 }))).path).toBe("context")
      expect((yield* refused(calls.identify({ userId: "u", integrations: true }))).path).toBe("integrations")
      expect((yield* refused(calls.identify({ userId: "u", messageId: "m".repeat(101) }))).path).toBe("messageId")
    }))

  it.effect("every offending field is listed, and nothing is queued", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      const error = yield* refused(loose(analytics).track({ event: "", properties: 3 }))
      expect(error.paths).toEqual(expect.arrayContaining(["event", "properties"]))
      yield* analytics.flush
      expect(fake.all).toHaveLength(0)
    }))

  it.effect("a value that is not JSON is refused", () =>
    Effect.gen(function*() {
      const { analytics } = yield* startClient()
      const error = yield* refused(analytics.track({ userId: "u", event: "e", properties: { big: 1n } }))
      expect(error.text).toMatch(/JSON/)
    }))
})

describe("stamping", () => {
  it.effect("messageId, timestamp (Clock) and context.library are set; the message is sent as validated", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T09:03:04.120Z"))
      const { analytics, fake } = yield* startClient()
      yield* analytics.track({
        userId: 42,
        event: "Order Completed",
        properties: { total: 12.5 },
        context: { ip: "203.0.113.9", library: { name: "spoofed" } },
        integrations: { Webhooks: true }
      })
      yield* analytics.flush
      const received = fake.all[0]!
      expect(received.body.sentAt).toBe("2026-11-21T09:03:04.120Z")
      const [message] = received.body.batch
      expect(message).toEqual({
        type: "track",
        userId: "42",
        event: "Order Completed",
        properties: { total: 12.5 },
        integrations: { Webhooks: true },
        messageId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        timestamp: "2026-11-21T09:03:04.120Z",
        context: { ip: "203.0.113.9", library: { name: "hookrelay", version } }
      })
    }))

  it.effect("a given messageId and timestamp (string or Date: a historical import) are kept", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T09:03:04.120Z"))
      const { analytics, fake } = yield* startClient()
      yield* analytics.identify({ userId: "u", messageId: "m-1", timestamp: "2019-03-01T10:00:00+01:00" })
      yield* analytics.page({ anonymousId: "a", timestamp: new Date(Date.UTC(2020, 0, 2, 3, 4, 5, 6)) })
      yield* analytics.flush
      const [identify, page] = fake.messages()
      expect(identify).toMatchObject({ messageId: "m-1", timestamp: "2019-03-01T10:00:00+01:00" })
      expect(page).toMatchObject({ type: "page", anonymousId: "a", timestamp: "2020-01-02T03:04:05.006Z" })
    }))

  it.effect("the caller's objects are left as they were", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      const context = { ip: "203.0.113.9" }
      const properties = { total: 1 }
      const params = { userId: "u", event: "e", properties, context, timestamp: new Date(0) }
      yield* analytics.track(params)
      yield* analytics.flush
      expect(params).toEqual({
        userId: "u",
        event: "e",
        properties: { total: 1 },
        context: { ip: "203.0.113.9" },
        timestamp: new Date(0)
      })
      expect(Object.keys(params)).toEqual(["userId", "event", "properties", "context", "timestamp"])
      expect(fake.messages()[0]).toMatchObject({
        timestamp: "1970-01-01T00:00:00.000Z",
        context: { ip: "203.0.113.9" }
      })
    }))

  it.effect("all six calls send their type and fields", () =>
    Effect.gen(function*() {
      const { analytics, fake } = yield* startClient()
      yield* analytics.identify({ userId: "u", traits: { plan: "pro" } })
      yield* analytics.track({ userId: "u", event: "e" })
      yield* analytics.page({ userId: "u", name: "Home", category: "Docs", properties: { url: "https://x.test/" } })
      yield* analytics.screen({ userId: "u", name: "Settings" })
      yield* analytics.group({ userId: "u", groupId: 7, traits: { seats: 3 } })
      yield* analytics.alias({ userId: "u", previousId: "anon-1" })
      yield* analytics.flush
      expect(fake.messages().map(({ context: _c, messageId: _m, timestamp: _t, ...rest }) => rest)).toEqual([
        { type: "identify", userId: "u", traits: { plan: "pro" } },
        { type: "track", userId: "u", event: "e" },
        { type: "page", userId: "u", name: "Home", category: "Docs", properties: { url: "https://x.test/" } },
        { type: "screen", userId: "u", name: "Settings" },
        { type: "group", userId: "u", groupId: "7", traits: { seats: 3 } },
        { type: "alias", userId: "u", previousId: "anon-1" }
      ])
    }))

  it("the library version is package.json's", () => {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    expect(version).toBe(manifest.version)
  })
})
