import { describe, expect, it } from "@effect/vitest"
import { decodeEnqueue, encodeEnqueue } from "../../src/store/sqlite/EnqueueWire.js"
import type { EnqueueRequest } from "../../src/store/sqlite/SqliteRequests.js"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("EnqueueWire", () => {
  it("carries every entry's fields and body in order, with one buffer for all bodies", () => {
    const request: EnqueueRequest = {
      sourceId: "web",
      now: 1_700_000_000_000,
      options: { countApiCall: false },
      entries: [
        { messageId: "m1", userId: "u1", type: "track", event: "Order Completed", body: bytes("{\"a\":1}") },
        { messageId: "m2", filtered: true },
        { messageId: "m3", type: "identify", body: new Uint8Array(0), destinationIds: ["webhooks", "crm"] },
        { messageId: "m4", userId: "u4", body: bytes("{\"é\":\"\\u0000\"}").subarray(1) }
      ]
    }
    const wire = encodeEnqueue(request)
    expect(wire.bodies.byteLength).toBe(7 + 0 + 14)
    const decoded = decodeEnqueue(structuredClone(wire, { transfer: [wire.bodies.buffer] }))
    expect(decoded.sourceId).toBe("web")
    expect(decoded.now).toBe(1_700_000_000_000)
    expect(decoded.options).toStrictEqual({ countApiCall: false })
    expect(decoded.entries.map((entry) => ({ ...entry, body: entry.body && Array.from(entry.body) }))).toStrictEqual(
      request.entries.map((entry) => ({
        messageId: entry.messageId,
        userId: entry.userId,
        type: entry.type,
        event: entry.event,
        filtered: entry.filtered === true,
        body: entry.body && Array.from(entry.body),
        ...(entry.destinationIds !== undefined && { destinationIds: entry.destinationIds })
      }))
    )
  })

  it("carries the destinations of an entry; the destination `webhooks` alone crosses as the default", () => {
    const wire = encodeEnqueue({
      sourceId: "web",
      now: 0,
      options: undefined,
      entries: [
        { messageId: "m1", body: bytes("{}"), destinationIds: ["webhooks"] },
        { messageId: "m2", body: bytes("{}"), destinationIds: ["crm"] },
        { messageId: "m3", body: bytes("{}") }
      ]
    })
    const entries = decodeEnqueue(wire).entries
    expect(entries.map((entry) => entry.destinationIds)).toStrictEqual([undefined, ["crm"], undefined])
    expect("destinationIds" in entries[0]!).toBe(false)
  })

  it("passes a body that is not bytes on as NULL, for the job row to refuse", () => {
    const wire = encodeEnqueue({
      sourceId: "web",
      now: 0,
      options: undefined,
      entries: [{ messageId: "m1", body: null as unknown as Uint8Array }]
    })
    expect(decodeEnqueue(wire).entries[0]!.body).toBeNull()
  })
})
