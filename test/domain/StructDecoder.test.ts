import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import { decodeWithIssues } from "../../src/domain/Issues.js"
import { structDecoder } from "../../src/domain/StructDecoder.js"

const optional = <A, I>(schema: Schema.Schema<A, I, never>) => Schema.optionalWith(schema, { exact: true })

// One field of each kind of node the steps cover, and two they leave to the schema (a nested struct, an array).
const Sample = Schema.Struct({
  kind: Schema.Literal("a", "b"),
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(5)),
  count: optional(Schema.NumberFromString),
  id: optional(
    Schema.transform(Schema.Union(Schema.NonEmptyString, Schema.Finite), Schema.String, {
      strict: true,
      decode: (value) => String(value),
      encode: (value) => value
    })
  ),
  flag: optional(Schema.Boolean),
  data: optional(Schema.declare((input): input is object => typeof input === "object" && input !== null)),
  nested: optional(Schema.Struct({ x: Schema.Number })),
  list: optional(Schema.Array(Schema.String)),
  toString: optional(Schema.String)
}).pipe(Schema.filter((value) => value.kind === "a" || value.id !== undefined || { path: ["id"], message: "needed" }))

const value = fc.oneof(
  fc.constantFrom("a", "b", "", "abcdef", "12", "x1", 0, 7, Number.NaN, true, { x: 1 }, { x: "1" }, ["s"], [1]),
  fc.string({ maxLength: 6 }),
  fc.integer(),
  fc.constant(undefined)
)
const fields = ["kind", "name", "count", "id", "flag", "data", "nested", "list", "toString", "extra"]
const input = fc.dictionary(fc.constantFrom(...fields), value, { maxKeys: 6 }).chain((known) =>
  fc.dictionary(fc.string().filter((key) => key !== "__proto__"), value, { maxKeys: 2 }).map((unknown) => ({
    ...unknown,
    kind: "a",
    name: "n",
    ...known
  }))
)

describe("structDecoder: the schema's decode, steps derived from its AST", () => {
  const decode = structDecoder(Sample)
  const reference = decodeWithIssues(Sample)

  it("accepts and refuses what the schema does, with the same issues and the same fields", () => {
    fc.assert(
      fc.property(input, (record) => {
        const actual = decode(record)
        const expected = reference(record)
        expect(actual).toStrictEqual(expected)
        if (Either.isRight(actual)) expect(actual.right).not.toBe(record)
      }),
      { numRuns: 2000 }
    )
  })

  it("decodes a valid input by its steps: keys stay in the input's order (Schema's puts unknown keys first)", () => {
    const record = { kind: "b", extra: 1, id: 12, name: "n", count: "3" }
    const decoded = Either.getOrThrow(decode(record))
    expect(decoded).toStrictEqual({ kind: "b", extra: 1, id: "12", name: "n", count: 3 })
    expect(Object.keys(decoded)).toStrictEqual(["kind", "extra", "id", "name", "count"])
    expect(Object.keys(Either.getOrThrow(reference(record)))).toStrictEqual(["extra", "kind", "name", "count", "id"])
  })

  it("leaves a field of a kind it does not cover, and every refusal, to the schema", () => {
    const record = { kind: "a", extra: 1, name: "n", list: ["s"] }
    expect(Object.keys(Either.getOrThrow(decode(record)))).toStrictEqual(["extra", "kind", "name", "list"])
    expect(decode({ kind: "b", name: "" })).toStrictEqual(reference({ kind: "b", name: "" }))
  })

  it("skips an optional field the input only inherits, as Schema does", () => {
    const inherited = Object.assign(Object.create({ flag: "not a boolean" }) as object, { kind: "a", name: "n" })
    expect(decode(inherited as Record<string, unknown>)).toStrictEqual(Either.right({ kind: "a", name: "n" }))
    expect(reference(inherited)).toStrictEqual(Either.right({ kind: "a", name: "n" }))
    // `toString` is inherited by every plain object: absent unless the input has its own.
    expect(Either.getOrThrow(decode({ kind: "a", name: "n" }))).toStrictEqual({ kind: "a", name: "n" })
    expect(Either.isLeft(decode({ kind: "a", name: "n", toString: 1 }))).toBe(true)
  })

  it("follows a change to the schema: a filter added there refuses here, with no list to update", () => {
    const Narrower = Schema.Struct({ name: Schema.String.pipe(Schema.maxLength(2)) })
    const Wider = Schema.Struct({ name: Schema.String })
    expect(Either.isRight(structDecoder(Wider)({ name: "abc" }))).toBe(true)
    expect(structDecoder(Narrower)({ name: "abc" })).toStrictEqual(decodeWithIssues(Narrower)({ name: "abc" }))
    expect(Either.isLeft(structDecoder(Narrower)({ name: "abc" }))).toBe(true)
  })
})
