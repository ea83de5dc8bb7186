import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { decodeMessage } from "../../src/domain/Message.js"
import { applyBatchDefaults, stampMessage } from "../../src/domain/Stamp.js"

const receivedAt = Date.parse("2026-11-21T12:00:00.000Z")
const stamp = (input: Record<string, unknown>, batchSentAt?: string) =>
  stampMessage(Result.getOrThrow(decodeMessage({ type: "track", userId: "u", event: "E", ...input })), {
    receivedAt,
    generatedMessageId: "generated",
    batchSentAt
  })

describe("stampMessage (REFERENCE §2 stamping)", () => {
  it("corrects the device clock's skew: timestamp := receivedAt − (sentAt − timestamp)", () => {
    // The device clock runs 1 h fast; the event happened 10 s before the device sent it.
    const stamped = stamp({ timestamp: "2026-11-21T13:00:00.000Z", sentAt: "2026-11-21T13:00:10.000Z" })
    expect(stamped.timestamp).toBe("2026-11-21T11:59:50.000Z")
    expect(stamped.originalTimestamp).toBe("2026-11-21T13:00:00.000Z")
    expect(stamped.sentAt).toBe("2026-11-21T13:00:10.000Z")
    expect(stamped.receivedAt).toBe("2026-11-21T12:00:00.000Z")
  })

  it("a message-level sentAt wins over the batch's", () => {
    const stamped = stamp(
      { timestamp: "2026-11-21T13:00:00.000Z", sentAt: "2026-11-21T13:00:10.000Z" },
      "2026-11-21T13:00:40.000Z"
    )
    expect(stamped.timestamp).toBe("2026-11-21T11:59:50.000Z")
  })

  it("uses the batch's sentAt when the message has none", () => {
    expect(stamp({ timestamp: "2026-11-21T13:00:00.000Z" }, "2026-11-21T13:00:30.000Z").timestamp).toBe(
      "2026-11-21T11:59:30.000Z"
    )
  })

  it("without sentAt the timestamp is kept (a historical import stays in the past)", () => {
    const stamped = stamp({ timestamp: "2019-01-01T00:00:00Z" })
    expect(stamped.timestamp).toBe("2019-01-01T00:00:00.000Z")
    expect(stamped).not.toHaveProperty("originalTimestamp")
  })

  it("without a timestamp the message happened when it was received", () => {
    expect(stamp({}).timestamp).toBe("2026-11-21T12:00:00.000Z")
    expect(stamp({}, "2026-11-21T13:00:30.000Z").timestamp).toBe("2026-11-21T12:00:00.000Z")
  })

  it("originalTimestamp stands in for a missing timestamp", () => {
    const stamped = stamp({ originalTimestamp: "2026-11-21T13:00:00.000Z", sentAt: "2026-11-21T13:00:05.000Z" })
    expect(stamped.timestamp).toBe("2026-11-21T11:59:55.000Z")
    expect(stamped.originalTimestamp).toBe("2026-11-21T13:00:00.000Z")
  })

  it("keeps a given messageId and generates one otherwise", () => {
    expect(stamp({ messageId: "mine" }).messageId).toBe("mine")
    expect(stamp({}).messageId).toBe("generated")
  })
})

describe("applyBatchDefaults", () => {
  it("puts the batch's context and integrations under the message's own", () => {
    const merged = applyBatchDefaults(
      { type: "track", context: { ip: "1.2.3.4" }, integrations: { Webhooks: true } },
      { context: { ip: "9.9.9.9", library: { name: "x" } }, integrations: { All: false } }
    )
    expect(merged).toStrictEqual({
      type: "track",
      context: { ip: "1.2.3.4", library: { name: "x" } },
      integrations: { All: false, Webhooks: true }
    })
  })

  it("leaves a non-object field alone for validation to refuse", () => {
    expect(applyBatchDefaults({ context: "bad" }, { context: { a: 1 } })).toStrictEqual({ context: "bad" })
  })
})
