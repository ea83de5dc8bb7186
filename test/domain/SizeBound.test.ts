import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { serializedSizeBound } from "../../src/domain/SizeBound.js"
import { applyBatchDefaults } from "../../src/domain/Stamp.js"

const serializedBytes = (text: string) => Buffer.byteLength(JSON.stringify(JSON.parse(text)), "utf8")

/** JSON texts written the ways clients may write them: escapes, long number literals, whitespace, repeated keys. */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom("true", "false", "null"),
    fc.tuple(
      fc.constantFrom("", "-"),
      fc.stringMatching(/^(0|[1-9][0-9]{0,30})$/),
      fc.option(fc.stringMatching(/^[0-9]{1,30}$/), { nil: undefined })
    ).map(([sign, integer, fraction]) => `${sign}${integer}${fraction === undefined ? "" : `.${fraction}`}`),
    fc.array(
      fc.oneof(
        fc.constantFrom("\\u0041", "\\n", "\\u000a", "\\u0000", "\\ud800", "\\udc00", "\\/", "\\\"", "\\\\", "\\t"),
        fc.string({ unit: "binary", maxLength: 4 }).map((s) => JSON.stringify(s).slice(1, -1))
      ),
      { maxLength: 8 }
    ).map((parts) => `"${parts.join("")}"`),
    fc.array(tie("value"), { maxLength: 4 }).map((items) => `[ ${items.join(" , ")} ]`),
    fc.array(fc.tuple(fc.constantFrom("\"a\"", "\"b\"", "\"\\u0063\""), tie("value")), { maxLength: 4 })
      .map((fields) => `{ ${fields.map(([key, value]) => `${key} : ${value}`).join(", ")} }`)
  )
})).value

describe("serializedSizeBound", () => {
  it("bounds what any parsed text serializes to", () => {
    fc.assert(
      fc.property(jsonText, (text) => {
        const bound = serializedSizeBound(text)
        if (bound !== undefined) expect(serializedBytes(text)).toBeLessThanOrEqual(bound)
      }),
      { numRuns: 2000 }
    )
  })

  it("bounds a message merged with the batch's context and integrations, written with no space to spare", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
        fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
        fc.dictionary(fc.string({ maxLength: 3 }), fc.boolean(), { maxKeys: 3 }),
        (message, context, integrations) => {
          const text = JSON.stringify({ batch: [message], context, integrations })
          const bound = serializedSizeBound(text)
          if (bound === undefined) return
          const merged = applyBatchDefaults(message, { context, integrations })
          expect(Buffer.byteLength(JSON.stringify(merged), "utf8")).toBeLessThanOrEqual(bound)
        }
      ),
      { numRuns: 1000 }
    )
  })

  it("bounds the worst number literals: rounding up carries into one more digit", () => {
    const text = `[${Array.from({ length: 200 }, () => "9999999999999999").join(",")}]`
    expect(serializedBytes(text)).toBeGreaterThan(Buffer.byteLength(text))
    expect(serializedBytes(text)).toBeLessThanOrEqual(serializedSizeBound(text)!)
  })

  it("knows no bound when an exponent is written, since 1e20 serializes to 21 digits", () => {
    expect(serializedBytes("[1e20]")).toBe(23)
    expect(serializedSizeBound("[1e20]")).toBeUndefined()
    expect(serializedSizeBound("[1E+2]")).toBeUndefined()
  })

  it("counts a byte that is not UTF-8 as the three bytes of U+FFFD it decodes to", () => {
    const text = Buffer.from([0x22, ...Array.from({ length: 100 }, () => 0xff), 0x22]).toString("utf8")
    expect(serializedBytes(text)).toBe(302)
    expect(serializedSizeBound(text)).toBeGreaterThanOrEqual(302)
  })
})
