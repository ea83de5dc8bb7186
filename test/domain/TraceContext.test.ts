import { describe, expect, it } from "@effect/vitest"
import { formatTraceparent, parseTraceparent } from "../../src/domain/TraceContext.js"

describe("TraceContext", () => {
  const traceId = "0af7651916cd43dd8448eb211c80319c"
  const spanId = "b7ad6b7169203331"

  it("reads a version 00 traceparent and writes it back", () => {
    const header = `00-${traceId}-${spanId}-01`
    expect(parseTraceparent(header)).toStrictEqual({ traceId, spanId, sampled: true })
    expect(formatTraceparent(parseTraceparent(header)!)).toBe(header)
    expect(parseTraceparent(`00-${traceId}-${spanId}-00`)?.sampled).toBe(false)
  })

  it("ignores what the spec says to ignore: malformed, all-zero ids, version ff, extra fields in version 00", () => {
    for (
      const header of [
        undefined,
        "",
        "garbage",
        `00-${traceId.toUpperCase()}-${spanId}-01`,
        `00-${"0".repeat(32)}-${spanId}-01`,
        `00-${traceId}-${"0".repeat(16)}-01`,
        `ff-${traceId}-${spanId}-01`,
        `00-${traceId}-${spanId}-01-extra`,
        `00-${traceId}-${spanId}`
      ]
    ) expect(parseTraceparent(header), String(header)).toBeUndefined()
  })

  it("accepts a later version's extra fields", () => {
    expect(parseTraceparent(`01-${traceId}-${spanId}-01-what-comes-next`)).toStrictEqual({
      traceId,
      spanId,
      sampled: true
    })
  })
})
