import { describe, expect, it } from "@effect/vitest"
import { newSpanId, newTraceId } from "../../src/telemetry/SpanIds.js"

describe("span ids", () => {
  it("are lowercase hex of the W3C lengths, distinct, across many refills of the random pool", () => {
    // A pool is 4 096 random bytes (8 192 hex digits): these ids draw through it more than twenty times.
    const spans = Array.from({ length: 5_000 }, newSpanId)
    const traces = Array.from({ length: 3_000 }, newTraceId)
    for (const id of spans) expect(id).toMatch(/^[0-9a-f]{16}$/)
    for (const id of traces) expect(id).toMatch(/^[0-9a-f]{32}$/)
    expect(new Set(spans).size).toBe(spans.length)
    expect(new Set(traces).size).toBe(traces.length)
  })
})
