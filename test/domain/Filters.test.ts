import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { dropsMessage, type Filters, jsonEqual, maxFilterRules } from "../../src/domain/Filters.js"
import { decodeWithIssues } from "../../src/domain/Issues.js"
import { decodeMessage, type Message } from "../../src/domain/Message.js"
import { skipReason } from "../../src/domain/Routing.js"
import { SourceConfig, type WebhookSettings } from "../../src/domain/Settings.js"

const decodeSource = decodeWithIssues(SourceConfig)

const sourceWith = (filters: unknown) => ({
  id: "web",
  writeKey: "wk_filters",
  webhooks: { enabled: true, endpoints: [{ url: "https://example.com/hook" }], filters }
})

const issues = (filters: unknown) => {
  const result = decodeSource(sourceWith(filters))
  if (Result.isSuccess(result)) throw new Error(`expected ${JSON.stringify(filters)} to be refused`)
  return result.failure
}

const accepted = (filters: unknown): Filters => {
  const result = decodeSource(sourceWith(filters))
  if (Result.isFailure(result)) throw new Error(`refused: ${JSON.stringify(result.failure)}`)
  return result.success.webhooks!.filters!
}

const message = (input: Record<string, unknown>): Message => Result.getOrThrow(decodeMessage({ userId: "u", ...input }))

const track = (event: string, properties?: Record<string, unknown>) =>
  message({ type: "track", event, ...(properties !== undefined && { properties }) })

describe("destination filters: validation (REFERENCE §10)", () => {
  it("accepts every condition alone and together, and an empty list of rules", () => {
    const filters = [
      { if: { type: ["page", "screen"] }, then: "drop" },
      { if: { event: ["Test Event"] }, then: "drop" },
      { if: { properties: { "plan": "free", "a.b": { c: [1, null] } } }, then: "drop" },
      { if: { type: ["track"], event: ["Signed Up"], properties: { "context.internal": true } }, then: "drop" }
    ]
    expect(accepted(filters)).toStrictEqual(filters)
    expect(accepted([])).toStrictEqual([])
  })

  it.each<[string, unknown, string, string]>([
    [
      "an unknown message type",
      [{ if: { event: ["E"] }, then: "drop" }, { if: { type: ["track", "click"] }, then: "drop" }],
      "webhooks.filters[1].if.type[1]",
      "must be one of identify, track, page, screen, group, alias"
    ],
    [
      "an empty if (it would drop everything)",
      [{ if: {}, then: "drop" }],
      "webhooks.filters[0].if",
      "must hold at least one condition (type, event or properties); to deliver nothing, set enabled to false"
    ],
    [
      "a misspelt condition",
      [{ if: { evnt: ["E"] }, then: "drop" }],
      "webhooks.filters[0].if.evnt",
      "is not a condition: use type, event, properties"
    ],
    [
      "a then other than drop",
      [{ if: { type: ["track"] }, then: "keep" }],
      "webhooks.filters[0].then",
      "must be \"drop\""
    ],
    ["a missing then", [{ if: { type: ["track"] } }], "webhooks.filters[0].then", "is missing"],
    ["a missing if", [{ then: "drop" }], "webhooks.filters[0].if", "is missing"],
    [
      "an extra rule field",
      [{ if: { type: ["track"] }, then: "drop", else: "keep" }],
      "webhooks.filters[0].else",
      "is not a rule field: use if, then"
    ],
    [
      "an empty type list",
      [{ if: { type: [] }, then: "drop" }],
      "webhooks.filters[0].if.type",
      "must hold 1 to 100 values (got 0)"
    ],
    [
      "too many events",
      [{ if: { event: Array.from({ length: 101 }, (_, i) => `e${i}`) }, then: "drop" }],
      "webhooks.filters[0].if.event",
      "must hold 1 to 100 values (got 101)"
    ],
    [
      "an empty event name",
      [{ if: { event: ["ok", ""] }, then: "drop" }],
      "webhooks.filters[0].if.event[1]",
      "must be 1 to 1024 characters"
    ],
    [
      "an event that is not a string",
      [{ if: { event: [3] }, then: "drop" }],
      "webhooks.filters[0].if.event[0]",
      "must be a string"
    ],
    [
      "empty properties",
      [{ if: { properties: {} }, then: "drop" }],
      "webhooks.filters[0].if.properties",
      "must hold 1 to 20 property paths (got 0)"
    ],
    [
      "a path with an empty name",
      [{ if: { properties: { "a..b": 1 } }, then: "drop" }],
      "webhooks.filters[0].if.properties.a..b",
      "must be property names joined by '.' (no empty name)"
    ],
    [
      "a property value over 4 KB",
      [{ if: { properties: { a: "x".repeat(4096) } }, then: "drop" }],
      "webhooks.filters[0].if.properties.a",
      "must be at most 4096 bytes as JSON"
    ],
    [
      "more rules than allowed",
      Array.from({ length: maxFilterRules + 1 }, () => ({ if: { type: ["track"] }, then: "drop" })),
      "webhooks.filters",
      `must hold at most ${maxFilterRules} rules (got ${maxFilterRules + 1})`
    ],
    ["filters that are not a list", { if: { type: ["track"] } }, "webhooks.filters", expect.any(String) as never]
  ])("refuses %s, naming the field", (_what, filters, path, message) => {
    expect(issues(filters)).toStrictEqual([{ path, message }])
  })
})

describe("destination filters: matching", () => {
  const drops = (filters: Filters, m: Message) => dropsMessage(filters, m)

  it("type: the message's type is in the list", () => {
    const filters = accepted([{ if: { type: ["page", "identify"] }, then: "drop" }])
    expect(drops(filters, message({ type: "page", name: "Home" }))).toBe(true)
    expect(drops(filters, message({ type: "identify", traits: { a: 1 } }))).toBe(true)
    expect(drops(filters, track("Page Viewed"))).toBe(false)
  })

  it("event: the message's event is in the list (case-sensitive); a message without one never matches", () => {
    const filters = accepted([{ if: { event: ["Test Event", "Debug"] }, then: "drop" }])
    expect(drops(filters, track("Test Event"))).toBe(true)
    expect(drops(filters, track("test event"))).toBe(false)
    expect(drops(filters, track("Signed Up"))).toBe(false)
    expect(drops(filters, message({ type: "identify" }))).toBe(false)
  })

  it("properties: a top-level and a nested a.b path, deep JSON equality, type-strict, missing paths never match", () => {
    const filters = accepted([{
      if: { properties: { "plan": "free", "account.tier": { level: 1, tags: ["x"] } } },
      then: "drop"
    }])
    const props = (plan: unknown, account: unknown) => ({ plan, account })
    expect(drops(filters, track("E", props("free", { tier: { tags: ["x"], level: 1 }, other: 2 })))).toBe(true)
    // Each path must hold.
    expect(drops(filters, track("E", props("pro", { tier: { level: 1, tags: ["x"] } })))).toBe(false)
    expect(drops(filters, track("E", props("free", { tier: { level: 1, tags: ["x", "y"] } })))).toBe(false)
    expect(drops(filters, track("E", props("free", { tier: { level: 1 } })))).toBe(false)
    // A value of another JSON type is not equal: "1" ≠ 1, null ≠ absent.
    const numeric = accepted([{ if: { properties: { "a.b": 1 } }, then: "drop" }])
    expect(drops(numeric, track("E", { a: { b: 1 } }))).toBe(true)
    expect(drops(numeric, track("E", { a: { b: "1" } }))).toBe(false)
    expect(drops(numeric, track("E", { a: { b: true } }))).toBe(false)
    expect(drops(numeric, track("E", { a: { b: [1] } }))).toBe(false)
    // Missing at any step, or a step through a non-object.
    expect(drops(numeric, track("E", { a: {} }))).toBe(false)
    expect(drops(numeric, track("E", { a: 1 }))).toBe(false)
    expect(drops(numeric, track("E", { a: [{ b: 1 }] }))).toBe(false)
    expect(drops(numeric, track("E"))).toBe(false)
    expect(drops(numeric, message({ type: "identify", traits: { a: { b: 1 } } }))).toBe(false)
    const nullValue = accepted([{ if: { properties: { gone: null } }, then: "drop" }])
    expect(drops(nullValue, track("E", { gone: null }))).toBe(true)
    expect(drops(nullValue, track("E", {}))).toBe(false)
  })

  it("a rule with all three conditions needs every one; any of two rules is enough", () => {
    const all = accepted([{ if: { type: ["track"], event: ["Order"], properties: { "test": true } }, then: "drop" }])
    expect(drops(all, track("Order", { test: true }))).toBe(true)
    expect(drops(all, track("Order", { test: false }))).toBe(false)
    expect(drops(all, track("Refund", { test: true }))).toBe(false)
    expect(drops(all, message({ type: "page", event: "Order", properties: { test: true } }))).toBe(false)

    const two = accepted([
      { if: { event: ["Debug"] }, then: "drop" },
      { if: { type: ["page"], properties: { "internal": true } }, then: "drop" }
    ])
    expect(drops(two, track("Debug"))).toBe(true)
    expect(drops(two, message({ type: "page", properties: { internal: true } }))).toBe(true)
    expect(drops(two, message({ type: "page", properties: { internal: false } }))).toBe(false)
    expect(drops(two, track("Signed Up", { internal: true }))).toBe(false)
    expect(dropsMessage(undefined, track("Debug"))).toBe(false)
    expect(dropsMessage([], track("Debug"))).toBe(false)
  })

  it("routing: filters apply after the destination's own switches and report 'filtered'", () => {
    const settings: WebhookSettings = {
      enabled: true,
      endpoints: [{ url: "https://example.com" }],
      filters: accepted([{ if: { event: ["Debug"] }, then: "drop" }])
    }
    expect(skipReason(settings, track("Debug"))).toBe("filtered")
    expect(skipReason(settings, track("Other"))).toBeUndefined()
    expect(skipReason({ ...settings, enabled: false }, track("Debug"))).toBe("disabled")
    expect(skipReason(settings, message({ type: "track", event: "Debug", integrations: { All: false } }))).toBe(
      "integrations"
    )
  })

  it("jsonEqual ignores key order and tells arrays from objects", () => {
    expect(jsonEqual({ a: 1, b: [1, { c: null }] }, { b: [1, { c: null }], a: 1 })).toBe(true)
    expect(jsonEqual({ a: 1 }, { a: 1, b: undefined })).toBe(false)
    expect(jsonEqual([], {})).toBe(false)
    expect(jsonEqual({ 0: "x" }, ["x"])).toBe(false)
    expect(jsonEqual(0, -0)).toBe(true)
    expect(jsonEqual(null, {})).toBe(false)
  })
})
