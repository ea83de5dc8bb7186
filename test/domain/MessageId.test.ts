import { describe, expect, it } from "@effect/vitest"
import { uuidv7 } from "../../src/domain/MessageId.js"

describe("uuidv7", () => {
  it("is a version 7, variant 1 UUID that carries its millisecond", () => {
    const at = Date.parse("2026-11-21T09:03:04.120Z")
    const id = uuidv7(at)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(at)
  })

  it("sorts by time and does not repeat", () => {
    const ids = Array.from({ length: 1000 }, (_, i) => uuidv7(1_800_000_000_000 + i))
    expect([...ids].sort()).toStrictEqual(ids)
    expect(new Set(Array.from({ length: 10_000 }, () => uuidv7(1_800_000_000_000))).size).toBe(10_000)
  })
})
