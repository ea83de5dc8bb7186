import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { decodeMessage, type Message } from "../../src/domain/Message.js"
import { deleteNoticeDestinations, identifyDestinations, routeMessage } from "../../src/domain/Routing.js"
import type { Destination } from "../../src/domain/Settings.js"
import { subscribes } from "../../src/domain/Subscription.js"

const message = (input: Record<string, unknown>): Message => Result.getOrThrow(decodeMessage({ userId: "u", ...input }))
const track = (event: string, extra: Record<string, unknown> = {}) => message({ type: "track", event, ...extra })

const destination = (id: string, extra: Partial<Destination> = {}): Destination => ({
  id,
  enabled: true,
  endpoints: [{ url: `https://${id}.example.com/in` }],
  ...extra
})

const everything = destination("everything")
const tracks = destination("tracks", { subscribe: { types: ["track"] } })
const orders = destination("orders", { subscribe: { events: ["Order Completed"] } })
const identifies = destination("identifies", { subscribe: { types: ["identify"], events: ["Order Completed"] } })
const off = destination("off", { enabled: false })
const noDebug = destination("no-debug", { filters: [{ if: { event: ["Debug"] }, then: "drop" }] })
const all = [everything, tracks, orders, identifies, off, noDebug]

const routed = (input: Message, destinations: ReadonlyArray<Destination> = all) => routeMessage(destinations, input)

describe("subscriptions (REFERENCE §1a)", () => {
  it("by type, and by event for tracks only", () => {
    expect(subscribes(undefined, "page", undefined)).toBe(true)
    expect(subscribes({ types: ["track"] }, "track", "X")).toBe(true)
    expect(subscribes({ types: ["track"] }, "page", undefined)).toBe(false)
    expect(subscribes({ events: ["A"] }, "track", "A")).toBe(true)
    expect(subscribes({ events: ["A"] }, "track", "B")).toBe(false)
    // `events` says nothing about the other types.
    expect(subscribes({ events: ["A"] }, "identify", undefined)).toBe(true)
    expect(subscribes({ types: ["identify"], events: ["A"] }, "identify", undefined)).toBe(true)
    expect(subscribes({ types: ["identify"], events: ["A"] }, "track", "A")).toBe(false)
  })
})

describe("routing: one job per enabled destination the message matches (REFERENCE §1a)", () => {
  it("a track goes where its type and event are subscribed, not to a disabled destination", () => {
    expect(routed(track("Order Completed"))).toStrictEqual({
      destinationIds: ["everything", "tracks", "orders", "no-debug"],
      filtered: false
    })
    expect(routed(track("Signed Up")).destinationIds).toStrictEqual(["everything", "tracks", "no-debug"])
  })

  it("an identify follows `types`; `events` does not hold it back", () => {
    expect(routed(message({ type: "identify" })).destinationIds).toStrictEqual([
      "everything",
      "orders",
      "identifies",
      "no-debug"
    ])
    expect(routed(message({ type: "page" })).destinationIds).toStrictEqual(["everything", "orders", "no-debug"])
  })

  it("a destination's filter drops it there only; counted as filtered when no destination takes it", () => {
    expect(routed(track("Debug")).destinationIds).toStrictEqual(["everything", "tracks"])
    expect(routed(track("Debug"), [noDebug, identifies])).toStrictEqual({ destinationIds: [], filtered: true })
    expect(routed(track("Other"), [identifies, off])).toStrictEqual({ destinationIds: [], filtered: false })
  })

  it("the integrations come first: `Webhooks: false` turns every webhook destination off", () => {
    expect(routed(track("Order Completed", { integrations: { Webhooks: false } }))).toStrictEqual({
      destinationIds: [],
      filtered: false
    })
    expect(routed(track("Debug", { integrations: { All: false } }), [noDebug])).toStrictEqual({
      destinationIds: [],
      filtered: false
    })
    expect(routed(track("X", { integrations: { All: false, Webhooks: true } })).destinationIds).toHaveLength(3)
  })

  it("no destination: no job", () => {
    expect(routed(track("X"), [])).toStrictEqual({ destinationIds: [], filtered: false })
  })

  it("a delete notice goes to every enabled destination; an audience identify only where identifies are taken", () => {
    expect(deleteNoticeDestinations(all).map((d) => d.id)).toStrictEqual([
      "everything",
      "tracks",
      "orders",
      "identifies",
      "no-debug"
    ])
    expect(identifyDestinations(all).map((d) => d.id)).toStrictEqual([
      "everything",
      "orders",
      "identifies",
      "no-debug"
    ])
  })
})
