import { describe, expect, it } from "@effect/vitest"
import { niceTicks, ratesBetween, totalsOf } from "../../console/src/numbers.js"
import {
  describeSubscribe,
  destinationInput,
  destinationPaths,
  formFromDestination,
  newDestinationForm
} from "../../console/src/pages/destinationForm.js"
import {
  emptyEndpoint,
  fieldPaths,
  formFromSource,
  newSourceForm,
  placeIssues,
  randomSecret,
  toInput
} from "../../console/src/pages/sourceForm.js"
import type { DestinationView, SourceView } from "../../console/src/types.js"

/** The console's pure parts: the source and destination forms ↔ admin API bodies, where issues are shown, the numbers. */

const stored: SourceView = {
  id: "web",
  writeKey: "wk_l…23",
  webhooks: {
    enabled: true,
    hasSharedSecret: true,
    sharedSecret: "s3cr…ef",
    endpoints: [
      { url: "https://a.example/hook", headers: { "X-Api-Key": "abcd…yz", "X-Env": "prod" } },
      { url: "https://b.example/hook" }
    ],
    filters: [
      {
        if: { type: ["track", "page"], event: ["Ping"], properties: { "plan.tier": "free", n: 2, on: true, x: null } },
        then: "drop"
      },
      { if: { properties: { tags: ["a", "b"] } }, then: "drop" }
    ]
  },
  createdAt: null,
  updatedAt: null
}

describe("source form", () => {
  it("asks again for what the API shows masked, and sends back everything else as it was", () => {
    const form = formFromSource(stored)
    const { issues } = toInput(form, false)
    expect(issues.map((issue) => issue.path)).toEqual([
      "writeKey",
      "webhooks.sharedSecret",
      "webhooks.endpoints[0].headers.X-Api-Key"
    ])
    const filled = {
      ...form,
      writeKey: "wk_live_123",
      secret: "new-secret",
      endpoints: form.endpoints.map((endpoint, e) =>
        e === 0
          ? { ...endpoint, headers: endpoint.headers.map((h) => (h.masked === undefined ? h : { ...h, value: "k-1" })) }
          : endpoint
      )
    }
    const again = toInput(filled, false)
    expect(again.issues).toEqual([])
    expect(again.input).toEqual({
      writeKey: "wk_live_123",
      webhooks: {
        enabled: true,
        sharedSecret: "new-secret",
        endpoints: [
          { url: "https://a.example/hook", headers: { "X-Api-Key": "k-1", "X-Env": "prod" } },
          { url: "https://b.example/hook" }
        ],
        filters: stored.webhooks!.filters
      }
    })
  })

  it("sends no secret for 'no signature', no webhooks when unchecked, and trims types", () => {
    const base = { ...newSourceForm(), id: "app", writeKey: "wk" }
    const endpoints = [{ ...emptyEndpoint(), url: " https://x.example/h " }]
    expect(toInput({ ...base, endpoints, secretMode: "none" }, true)).toEqual({
      input: { writeKey: "wk", webhooks: { enabled: true, endpoints: [{ url: "https://x.example/h" }] } },
      issues: []
    })
    expect(toInput({ ...base, hasWebhooks: false }, true)).toEqual({ input: { writeKey: "wk" }, issues: [] })
    const rule = { key: 1, types: " track ,, page ", events: [], properties: [] }
    const { input } = toInput({ ...base, endpoints, secretMode: "none", rules: [rule] }, true)
    expect(input.webhooks?.filters).toEqual([{ if: { type: ["track", "page"] }, then: "drop" }])
  })

  it("refuses a number or JSON value that does not parse, at its property row", () => {
    const base = { ...newSourceForm(), id: "app", writeKey: "wk", secretMode: "none" as const }
    const properties = [
      { key: 1, path: "n", kind: "number" as const, value: "12x" },
      { key: 2, path: "o", kind: "json" as const, value: "{nope" }
    ]
    const { issues } = toInput({ ...base, rules: [{ key: 3, types: "", events: [], properties }] }, true)
    expect(issues).toEqual([
      { path: "webhooks.filters[0].if.properties.n", message: "must be a number" },
      { path: "webhooks.filters[0].if.properties.o", message: "must be JSON, such as {\"a\": 1} or [1, 2]" }
    ])
  })

  it("places each API issue at the most specific field of the form, the rest at the form", () => {
    const form = formFromSource(stored)
    const placed = placeIssues([
      { path: "webhooks.filters[1].if.type[0]", message: "must be one of …" },
      { path: "webhooks.filters[0].if.event[0]", message: "must be 1 to 1024 characters" },
      { path: "webhooks.filters[0].if.properties.plan.tier", message: "too big" },
      { path: "webhooks.filters[0].if.evnt", message: "is not a condition" },
      { path: "webhooks.endpoints[1].url", message: "must be an absolute http: or https: URL" },
      { path: "webhooks.endpoints[0].headers.X-Env", message: "must not contain CR" },
      { path: "webhooks.endpoints", message: "must hold 1 to 5 endpoints" },
      { path: "writeKey", message: "is already used by another source" },
      { path: "somethingElse", message: "odd" }
    ], fieldPaths(form))
    expect(Object.fromEntries([...placed].map(([path, issues]) => [path, issues.map((i) => i.message)]))).toEqual({
      "webhooks.filters[1].if.type": ["must be one of …"],
      "webhooks.filters[0].if.event[0]": ["must be 1 to 1024 characters"],
      "webhooks.filters[0].if.properties.plan.tier": ["too big"],
      "webhooks.filters[0].if": ["is not a condition"],
      "webhooks.endpoints[1].url": ["must be an absolute http: or https: URL"],
      "webhooks.endpoints[0].headers.X-Env": ["must not contain CR"],
      "webhooks.endpoints": ["must hold 1 to 5 endpoints"],
      writeKey: ["is already used by another source"],
      "": ["odd"]
    })
  })

  it("generates 256-bit base64url secrets", () => {
    const a = randomSecret()
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(randomSecret()).not.toBe(a)
  })
})

describe("console numbers", () => {
  const day = (n: Partial<Record<string, number | null>>) => ({
    day: "2026-11-21",
    apiCalls: 0,
    messages: 0,
    filtered: 0,
    delivered: 0,
    dead: 0,
    averageLatencyMs: null,
    ...n
  })

  it("totals usage days, latency weighted by deliveries", () => {
    expect(totalsOf([
      day({ apiCalls: 2, messages: 10, filtered: 1, delivered: 8, dead: 1, averageLatencyMs: 100 }),
      day({}),
      day({ apiCalls: 1, messages: 2, delivered: 2, averageLatencyMs: 600 })
    ])).toEqual({ apiCalls: 3, messages: 12, filtered: 1, delivered: 10, dead: 1, averageLatencyMs: 200 })
    expect(totalsOf([day({})]).averageLatencyMs).toBeNull()
  })

  it("derives throughput from two backlog readings, never negative", () => {
    const reading = (at: number, pending: number, delivered: number, dead: number) => ({
      at,
      backlog: { pending, delivering: 0, delivered, dead }
    })
    expect(ratesBetween(reading(0, 10, 100, 0), reading(2000, 4, 110, 2))).toEqual({
      delivered: 5,
      dead: 1,
      created: 3
    })
    // Retention purged delivered jobs between the readings.
    expect(ratesBetween(reading(0, 0, 100, 0), reading(1000, 0, 20, 0)).delivered).toBe(0)
  })

  it("picks round axis ticks that cover the maximum", () => {
    expect(niceTicks(0)).toEqual([0, 1])
    expect(niceTicks(5)).toEqual([0, 2, 4, 6])
    expect(niceTicks(757)).toEqual([0, 200, 400, 600, 800])
    expect(niceTicks(1)).toEqual([0, 0.5, 1])
  })
})

describe("destination form", () => {
  const destination: DestinationView = {
    id: "crm",
    name: "CRM",
    enabled: true,
    hasSharedSecret: true,
    sharedSecret: "s3cr…ef",
    endpoints: [{ url: "https://crm.example/hook", headers: { "X-Api-Key": "abcd…yz" } }],
    subscribe: { types: ["track", "identify"], events: ["Order Completed"] },
    retryWindow: "30 minutes",
    filters: [{ if: { type: ["page"] }, then: "drop" }]
  }

  it("asks again for what the API shows masked, and sends back the rest as it was", () => {
    const form = formFromDestination(destination)
    expect(form.types).toEqual(["track", "identify"])
    const { issues } = destinationInput(form, false)
    expect(issues.map((issue) => issue.path)).toEqual(["sharedSecret", "endpoints[0].headers.X-Api-Key"])
    const filled = {
      ...form,
      secret: "the-secret",
      endpoints: form.endpoints.map((e) => ({ ...e, headers: e.headers.map((h) => ({ ...h, value: "key" })) }))
    }
    expect(destinationInput(filled, false)).toEqual({
      input: {
        enabled: true,
        name: "CRM",
        sharedSecret: "the-secret",
        endpoints: [{ url: "https://crm.example/hook", headers: { "X-Api-Key": "key" } }],
        filters: [{ if: { type: ["page"] }, then: "drop" }],
        subscribe: { types: ["track", "identify"], events: ["Order Completed"] },
        retryWindow: "30 minutes"
      },
      issues: []
    })
  })

  it("leaves out what is empty, refuses filters that are not JSON, and needs an id for a new one", () => {
    const form = { ...newDestinationForm(), secretMode: "none" as const, filters: "[{" }
    const { input, issues } = destinationInput(form, true)
    expect(issues.map((issue) => issue.path)).toEqual(["destinationId", "filters"])
    expect(input).toEqual({ enabled: true, endpoints: [{ url: "" }] })
  })

  it("places the server's issues at the field they name", () => {
    const form = formFromDestination(destination)
    const placed = placeIssues(
      [
        { path: "subscribe.events[0]", message: "must be 1 to 1024 characters" },
        { path: "endpoints[0].url", message: "must be an absolute http: or https: URL" },
        { path: "filters[0].if.type[0]", message: "unknown type" },
        { path: "destinationId", message: "must be a slug" }
      ],
      destinationPaths(form)
    )
    expect([...placed.keys()]).toEqual(["subscribe.events", "endpoints[0].url", "filters", "destinationId"])
  })

  it("describes a subscription in a line", () => {
    expect(describeSubscribe(undefined)).toBe("every message")
    expect(describeSubscribe({ types: ["identify"] })).toBe("identify")
    expect(describeSubscribe({ events: ["A", "B"] })).toBe("every type; track events A, B")
  })
})
