import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as fc from "fast-check"
import { copyFields, copyWith, mergeFields } from "../../src/domain/Merge.js"
import { decodeMessage } from "../../src/domain/Message.js"

const record = fc.dictionary(fc.string(), fc.jsonValue())

describe("object copies without spreads", () => {
  it("give what a spread gives, keys in the same order", () => {
    fc.assert(fc.property(record, record, (first, second) => {
      expect(Object.entries(mergeFields(first, second))).toEqual(Object.entries({ ...first, ...second }))
      expect(Object.entries(copyFields(first))).toEqual(Object.entries({ ...first }))
      expect(Object.entries(copyWith(first, "type", "track"))).toEqual(Object.entries({ ...first, type: "track" }))
    }))
  })

  it("copy a __proto__ key from JSON as data, never as the copy's prototype", () => {
    const hostile = JSON.parse("{\"__proto__\":{\"userId\":\"injected\"},\"event\":\"e\"}") as object
    for (
      const copy of [mergeFields(hostile, {}), mergeFields({}, hostile), copyFields(hostile), copyWith(hostile, "a", 1)]
    ) {
      expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
      expect((copy as { userId?: unknown }).userId).toBeUndefined()
      expect(Object.prototype.hasOwnProperty.call(copy, "__proto__")).toBe(true)
    }
  })

  it("a message with a __proto__ key is refused, naming it (its fields would pass the checks unsent)", () => {
    for (
      const json of [
        "{\"__proto__\":{\"userId\":\"u\"},\"event\":\"e\"}",
        "{\"__proto__\":1,\"userId\":\"u\",\"event\":\"e\"}"
      ]
    ) {
      expect(decodeMessage(JSON.parse(json), "track")).toEqual(
        Result.fail([{ path: "__proto__", message: "is not allowed" }])
      )
    }
  })
})
