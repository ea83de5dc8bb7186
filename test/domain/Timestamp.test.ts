import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  formatTimestamp,
  isCanonicalTimestamp,
  normalizeTimestamp,
  parseIso8601,
  parseIso8601Generic
} from "../../src/domain/Timestamp.js"

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

  // parseIso8601 reads the canonical form itself; everything else goes to parseIso8601Generic. Both must agree on
  // every string of that shape, in range or not (month 13, 30 February, hour 24, second 60, year 0999, letters).
  const digits = (count: number) =>
    fc.oneof(
      fc.integer({ min: 0, max: 10 ** count - 1 }).map((n) => String(n).padStart(count, "0")),
      fc.string({ minLength: count, maxLength: count })
    )
  const canonicalShaped = fc.tuple(digits(4), digits(2), digits(2), digits(2), digits(2), digits(2), digits(3)).map(
    ([year, month, day, hour, minute, second, millis]) =>
      `${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}Z`
  )
  const nearCanonical = fc.tuple(canonicalShaped, fc.nat(23), fc.string({ maxLength: 2 })).map(
    ([text, at, insert]) => text.slice(0, at) + insert + text.slice(at + 1)
  )
  const anyInstant = fc.integer({ min: Date.UTC(-5000, 0, 1), max: Date.UTC(12000, 0, 1) })

  it("the canonical fast path and the generic reader agree on every string of (nearly) that shape", () => {
    fc.assert(
      fc.property(fc.oneof(canonicalShaped, nearCanonical, anyInstant.map(formatTimestamp)), (text) => {
        expect(parseIso8601(text)).toBe(parseIso8601Generic(text))
        const generic = parseIso8601Generic(text)
        expect(normalizeTimestamp(text)).toBe(generic === undefined ? undefined : formatTimestamp(generic))
        if (isCanonicalTimestamp(text)) expect(formatTimestamp(generic!)).toBe(text)
      }),
      { numRuns: 5000 }
    )
  }, 30_000)

  it("formatTimestamp writes each instant the same, whatever it wrote before", () => {
    fc.assert(
      fc.property(fc.array(anyInstant, { maxLength: 6 }), (instants) => {
        for (const instant of [...instants, ...instants.reverse()]) {
          expect(formatTimestamp(instant)).toBe(new Date(instant).toISOString())
        }
      })
    )
  })
})
