import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { applySourceConfig, destinationById, webhooksOf } from "../../src/domain/Destinations.js"
import { retryWindowMillis, timeoutMillis } from "../../src/domain/DestinationTiming.js"
import { decodeWithIssues } from "../../src/domain/Issues.js"
import { type Destination, SourceConfig } from "../../src/domain/Settings.js"

const decodeSource = decodeWithIssues(SourceConfig)

const destination = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  enabled: true,
  endpoints: [{ url: `https://${id}.example.com/in` }],
  ...extra
})

const withDestinations = (destinations: unknown, webhooks?: unknown) => ({
  id: "web",
  writeKey: "wk_web",
  destinations,
  ...(webhooks !== undefined && { webhooks })
})

const accepted = (input: unknown): SourceConfig => {
  const result = decodeSource(input)
  if (Result.isFailure(result)) throw new Error(`refused: ${JSON.stringify(result.failure)}`)
  return result.success
}

const refused = (input: unknown) => {
  const result = decodeSource(input)
  if (Result.isSuccess(result)) throw new Error(`expected ${JSON.stringify(input)} to be refused`)
  return result.failure
}

describe("destinations: validation (REFERENCE §1a)", () => {
  it("accepts 0 to 20 destinations with every field", () => {
    const full = destination("crm", {
      name: "The CRM",
      sharedSecret: "s3cret",
      filters: [{ if: { event: ["Debug"] }, then: "drop" }],
      subscribe: { types: ["track", "identify"], events: ["Order Completed"] },
      retryWindow: "72 hours",
      timeout: "30 seconds",
      signing: "both"
    })
    expect(accepted(withDestinations([full])).destinations).toStrictEqual([full])
    expect(accepted(withDestinations([])).destinations).toStrictEqual([])
    const twenty = Array.from({ length: 20 }, (_, i) => destination(`d${i}`))
    expect(accepted(withDestinations(twenty)).destinations).toHaveLength(20)
  })

  it("refuses more than 20, naming the list", () => {
    const many = Array.from({ length: 21 }, (_, i) => destination(`d${i}`))
    expect(refused(withDestinations(many))).toStrictEqual([
      { path: "destinations", message: "must hold at most 20 destinations (got 21)" }
    ])
  })

  it("refuses an id used twice and an id that is not a slug, naming the destination", () => {
    expect(refused(withDestinations([destination("crm"), destination("dw"), destination("crm")]))).toStrictEqual([
      { path: "destinations[2].id", message: "\"crm\" is the id of an earlier destination" }
    ])
    for (const id of ["CRM", "", "-x", "a b", "x".repeat(65)]) {
      const issues = refused(withDestinations([destination("ok"), { ...destination("x"), id }]))
      expect(issues.map((issue) => issue.path)).toStrictEqual(["destinations[1].id"])
    }
  })

  it("names the field of a bad subscription, window or deadline", () => {
    const bad = destination("crm", {
      subscribe: { types: ["track", "purchase"], events: ["ok", 3] },
      retryWindow: "30 seconds",
      timeout: "1 minute"
    })
    expect(refused(withDestinations([destination("ok"), destination("dw"), bad]))).toStrictEqual([
      {
        path: "destinations[2].subscribe.types[1]",
        message: "must be one of identify, track, page, screen, group, alias"
      },
      { path: "destinations[2].subscribe.events[1]", message: "must be a string" },
      { path: "destinations[2].retryWindow", message: "must be 1 minute to 72 hours, got \"30 seconds\"" },
      { path: "destinations[2].timeout", message: "must be 1 to 30 seconds, got \"1 minute\"" }
    ])
    expect(refused(withDestinations([destination("crm", { subscribe: { events: [""] } })]))).toStrictEqual([
      { path: "destinations[0].subscribe.events[0]", message: "must be 1 to 1024 characters" }
    ])
    expect(refused(withDestinations([destination("crm", { subscribe: { types: [] } })]))).toStrictEqual([
      { path: "destinations[0].subscribe.types", message: "must hold 1 to 100 values (got 0)" }
    ])
    expect(refused(withDestinations([destination("crm", { timeout: "soon" })]))).toStrictEqual([
      {
        path: "destinations[0].timeout",
        message: "must be a duration such as \"30 seconds\" or milliseconds, got \"soon\""
      }
    ])
  })

  it("names a destination's endpoint and signing problems under its index", () => {
    const issues = refused(withDestinations([
      destination("ok"),
      { ...destination("crm"), endpoints: [{ url: "nope" }], asymmetric: true }
    ]))
    expect(issues).toStrictEqual([
      { path: "destinations[1].endpoints[0].url", message: "must be an absolute http: or https: URL" }
    ])
    expect(refused(withDestinations([{ ...destination("crm"), asymmetric: true }]))).toStrictEqual([
      { path: "destinations[0].asymmetric", message: "needs signing \"standard\" or \"both\"" }
    ])
  })

  it("refuses a body giving the destination `webhooks` twice: as the object and in the list", () => {
    const webhooks = { enabled: true, endpoints: [{ url: "https://a.example.com" }] }
    expect(refused(withDestinations([destination("crm"), destination("webhooks")], webhooks))).toStrictEqual([
      { path: "destinations[1].id", message: "\"webhooks\" is given as the webhooks object too: give it once" }
    ])
    // Either alone, or both without a `webhooks` in the list, is fine.
    accepted(withDestinations([destination("crm")], webhooks))
    accepted(withDestinations([destination("webhooks")]))
  })

  it("the `webhooks` object takes a destination's fields too (it is the destination `webhooks`)", () => {
    const webhooks = {
      enabled: true,
      endpoints: [{ url: "https://a.example.com" }],
      subscribe: { types: ["identify"] },
      retryWindow: "1 hour"
    }
    expect(accepted({ id: "web", writeKey: "wk", webhooks }).webhooks).toStrictEqual(webhooks)
  })
})

describe("destinations: a body against the stored list (REFERENCE §1a)", () => {
  const crm = destination("crm") as Destination
  const dw = destination("dw") as Destination
  const hooks = destination("webhooks") as Destination
  const { id: _id, ...webhooks } = hooks

  it("`destinations` replaces the list, `webhooks` first", () => {
    expect(applySourceConfig([hooks, crm], { destinations: [dw] })).toStrictEqual([dw])
    expect(applySourceConfig([crm], { destinations: [dw, hooks] })).toStrictEqual([hooks, dw])
    expect(applySourceConfig([crm], { destinations: [dw], webhooks })).toStrictEqual([hooks, dw])
    expect(applySourceConfig([crm], { destinations: [] })).toStrictEqual([])
  })

  it("`webhooks` alone sets only that destination; its absence removes only it", () => {
    const changed = { ...webhooks, enabled: false }
    expect(applySourceConfig([hooks, crm, dw], { webhooks: changed })).toStrictEqual([
      { id: "webhooks", ...changed },
      crm,
      dw
    ])
    expect(applySourceConfig([crm, dw], { webhooks })).toStrictEqual([hooks, crm, dw])
    expect(applySourceConfig([hooks, crm, dw], {})).toStrictEqual([crm, dw])
    expect(applySourceConfig([], {})).toStrictEqual([])
  })

  it("reads the destination `webhooks` back as the `webhooks` object", () => {
    expect(webhooksOf([crm, hooks])).toStrictEqual(webhooks)
    expect(webhooksOf([crm])).toBeUndefined()
    expect(destinationById([crm, dw], "dw")).toBe(dw)
    expect(destinationById([crm, dw], "nope")).toBeUndefined()
  })

  it("the window and the deadline: 4 hours and 5 seconds unless set", () => {
    expect(retryWindowMillis({})).toBe(4 * 3_600_000)
    expect(retryWindowMillis({ retryWindow: "90 minutes" })).toBe(90 * 60_000)
    expect(retryWindowMillis({ retryWindow: "60000" })).toBe(60_000)
    expect(timeoutMillis({})).toBe(5_000)
    expect(timeoutMillis({ timeout: "12 seconds" })).toBe(12_000)
  })
})
