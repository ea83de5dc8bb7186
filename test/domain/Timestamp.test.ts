import { describe, expect, it } from "@effect/vitest"
import { formatTimestamp, parseIso8601 } from "../../src/domain/Timestamp.js"

describe("ISO 8601 timestamps", () => {
  it.each([
    ["2026-11-21T09:03:04.120Z", "2026-11-21T09:03:04.120Z"],
    ["2026-11-21T10:03:04.120+01:00", "2026-11-21T09:03:04.120Z"],
    ["2026-11-21T04:03:04-0500", "2026-11-21T09:03:04.000Z"],
    ["2026-11-21T09:03:04.123456Z", "2026-11-21T09:03:04.123Z"],
    ["2026-11-21T09:03:04", "2026-11-21T09:03:04.000Z"],
    ["2026-11-21", "2026-11-21T00:00:00.000Z"],
    ["2026-11-21 09:03:04Z", "2026-11-21T09:03:04.000Z"]
  ])("%s is %s", (input, expected) => {
    const parsed = parseIso8601(input)
    expect(parsed === undefined ? undefined : formatTimestamp(parsed)).toBe(expected)
  })

  it.each(["", "now", "2026-02-30T00:00:00Z", "21/11/2026", "2026-11-21T9:3:4Z", "2026-11-21T09:03:04+25:00"])(
    "%j is not a timestamp",
    (input) => {
      expect(parseIso8601(input)).toBeUndefined()
    }
  )
})
