import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { deleteNotificationBody, deliveredBody, encodeBody } from "../../src/domain/DeliveredBody.js"
import { decodeMessage } from "../../src/domain/Message.js"
import { stampMessage } from "../../src/domain/Stamp.js"

const receivedAt = Date.parse("2026-11-21T09:03:05.000Z")

const bodyOf = (input: Record<string, unknown>) =>
  deliveredBody(
    stampMessage(Result.getOrThrow(decodeMessage(input)), { receivedAt, generatedMessageId: "generated-id" })
  )

const common = {
  messageId: "m-1",
  timestamp: "2026-11-21T09:03:04.12Z",
  receivedAt: "2026-11-21T09:03:05.000Z"
}

describe("deliveredBody (REFERENCE §3)", () => {
  it("page: name, category and properties with the page's keys and others", () => {
    const properties = { path: "/p", referrer: "https://r.example", title: "T", url: "https://x.example/p", extra: 1 }
    expect(
      bodyOf({
        type: "page",
        messageId: "m-1",
        userId: "u1",
        name: "Home",
        category: "Docs",
        properties,
        timestamp: "2026-11-21T09:03:04.12Z"
      })
    )
      .toStrictEqual({
        version: 1,
        type: "page",
        messageId: "m-1",
        userId: "u1",
        name: "Home",
        category: "Docs",
        properties,
        timestamp: "2026-11-21T09:03:04.120Z",
        receivedAt: common.receivedAt,
        context: {}
      })
  })

  it("page without name or properties still carries properties {}", () => {
    expect(bodyOf({ type: "page", anonymousId: "a1", messageId: "m-1" })).toStrictEqual({
      version: 1,
      type: "page",
      messageId: "m-1",
      anonymousId: "a1",
      properties: {},
      timestamp: "2026-11-21T09:03:05.000Z",
      receivedAt: common.receivedAt,
      context: {}
    })
  })

  it("screen: name, properties when given, device/os/app context", () => {
    const context = {
      device: { model: "iPhone15,2", type: "ios" },
      os: { name: "iOS", version: "17.1" },
      app: { build: "42", name: "Shop", version: "3.2.1" }
    }
    expect(bodyOf({ ...common, type: "screen", userId: "u1", name: "Cart", context, properties: { items: 2 } }))
      .toStrictEqual({
        version: 1,
        type: "screen",
        messageId: "m-1",
        userId: "u1",
        name: "Cart",
        properties: { items: 2 },
        timestamp: "2026-11-21T09:03:04.120Z",
        receivedAt: common.receivedAt,
        context
      })
    expect(bodyOf({ ...common, type: "screen", userId: "u1", name: "Cart" })).not.toHaveProperty("properties")
  })

  it("identify: traits", () => {
    expect(bodyOf({ ...common, type: "identify", userId: "u1", traits: { email: "a@b.c", plan: "pro" } }))
      .toStrictEqual({
        version: 1,
        type: "identify",
        messageId: "m-1",
        userId: "u1",
        traits: { email: "a@b.c", plan: "pro" },
        timestamp: "2026-11-21T09:03:04.120Z",
        receivedAt: common.receivedAt,
        context: {}
      })
    expect(bodyOf({ ...common, type: "identify", anonymousId: "a" }).traits).toStrictEqual({})
  })

  it("track: event and properties", () => {
    expect(
      bodyOf({
        ...common,
        type: "track",
        userId: "u1",
        anonymousId: "a1",
        event: "Order Completed",
        properties: { revenue: 39.95 }
      })
    )
      .toStrictEqual({
        version: 1,
        type: "track",
        messageId: "m-1",
        userId: "u1",
        anonymousId: "a1",
        event: "Order Completed",
        properties: { revenue: 39.95 },
        timestamp: "2026-11-21T09:03:04.120Z",
        receivedAt: common.receivedAt,
        context: {}
      })
  })

  it("alias: 'Previous ID' and 'User ID', no userId and no properties", () => {
    const body = bodyOf({ ...common, type: "alias", userId: "user-1", previousId: "anon-1", properties: { x: 1 } })
    expect(body).toStrictEqual({
      version: 1,
      type: "alias",
      messageId: "m-1",
      "Previous ID": "anon-1",
      "User ID": "user-1",
      timestamp: "2026-11-21T09:03:04.120Z",
      receivedAt: common.receivedAt,
      context: {}
    })
  })

  it("group: groupId and traits", () => {
    expect(bodyOf({ ...common, type: "group", userId: "u1", groupId: "g1", traits: { name: "Initech" } }))
      .toStrictEqual({
        version: 1,
        type: "group",
        messageId: "m-1",
        userId: "u1",
        groupId: "g1",
        traits: { name: "Initech" },
        timestamp: "2026-11-21T09:03:04.120Z",
        receivedAt: common.receivedAt,
        context: {}
      })
  })

  it("delete: exactly type, userId and timestamp, no version", () => {
    const body = deleteNotificationBody("user-ü-42", Date.parse("2026-11-21T09:03:04.120Z"))
    expect(new TextDecoder().decode(encodeBody(body))).toBe(
      "{\"type\":\"delete\",\"userId\":\"user-ü-42\",\"timestamp\":\"2026-11-21T09:03:04.120Z\"}"
    )
  })

  it("every timestamp is written with milliseconds and Z", () => {
    const body = bodyOf({
      type: "track",
      userId: "u",
      event: "E",
      messageId: "m",
      timestamp: "2026-11-21T10:03:04+01:00",
      sentAt: "2026-11-21T10:03:04.500+01:00"
    })
    for (const key of ["timestamp", "receivedAt", "sentAt", "originalTimestamp"]) {
      expect(body[key]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    }
  })

  it("drops ingest-only fields (integrations, _metadata) from the delivered body", () => {
    const body = bodyOf({
      ...common,
      type: "track",
      userId: "u",
      event: "E",
      integrations: { All: true },
      _metadata: {}
    })
    expect(Object.keys(body)).toStrictEqual([
      "version",
      "type",
      "messageId",
      "userId",
      "event",
      "properties",
      "timestamp",
      "receivedAt",
      "context"
    ])
  })

  it("serializes with the key order of the signed bytes", () => {
    const bytes = encodeBody(bodyOf({ ...common, type: "alias", userId: "user-1", previousId: "anon-1" }))
    expect(new TextDecoder().decode(bytes)).toBe(
      "{\"version\":1,\"type\":\"alias\",\"messageId\":\"m-1\",\"Previous ID\":\"anon-1\",\"User ID\":\"user-1\"," +
        "\"timestamp\":\"2026-11-21T09:03:04.120Z\",\"receivedAt\":\"2026-11-21T09:03:05.000Z\",\"context\":{}}"
    )
  })
})
