import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { validateBatch } from "../../src/domain/Batch.js"
import { InvalidMessages, MessageTooLarge, TooManyMessages } from "../../src/domain/IngestErrors.js"

const track = (index: number) => ({ type: "track", userId: `u${index}`, event: "E" })

describe("validateBatch (REFERENCE §2: all or nothing)", () => {
  it("accepts a valid batch and applies the batch's context under each message's", () => {
    const result = Result.getOrThrow(
      validateBatch([{ ...track(0), context: { ip: "1.1.1.1" } }, track(1)], { context: { library: { name: "l" } } })
    )
    expect(result.map((message) => message.context)).toStrictEqual([
      { library: { name: "l" }, ip: "1.1.1.1" },
      { library: { name: "l" } }
    ])
  })

  it("lists every bad message with its index", () => {
    const result = validateBatch([track(0), { type: "track", userId: "u" }, track(2), { type: "group", userId: "u" }])
    expect(result).toStrictEqual(Result.fail(
      new InvalidMessages({
        errors: [
          { index: 1, path: "event", message: "is missing" },
          { index: 3, path: "groupId", message: "is missing" }
        ]
      })
    ))
  })

  it("refuses more than 2 500 messages", () => {
    const items = Array.from({ length: 2501 }, (_, index) => track(index))
    expect(validateBatch(items)).toStrictEqual(Result.fail(new TooManyMessages({ count: 2501, limit: 2500 })))
    expect(Result.isSuccess(validateBatch(items.slice(1)))).toBe(true)
  })

  it("refuses a message over 32 KiB, naming its index and size", () => {
    const big = { ...track(1), properties: { blob: "x".repeat(33 * 1000) } }
    const size = Buffer.byteLength(JSON.stringify(big))
    expect(validateBatch([track(0), big])).toStrictEqual(
      Result.fail(new MessageTooLarge({ index: 1, size, limit: 32768 }))
    )
  })

  it("measures every message when the request's size bound is over the limit or unknown", () => {
    const big = { ...track(1), properties: { blob: "x".repeat(33 * 1000) } }
    const size = Buffer.byteLength(JSON.stringify(big))
    const refused = Result.fail(new MessageTooLarge({ index: 1, size, limit: 32768 }))
    expect(validateBatch([track(0), big], {}, undefined, 32769)).toStrictEqual(refused)
    expect(validateBatch([track(0), big], {}, undefined, undefined)).toStrictEqual(refused)
  })

  it("refuses a message nested more than 100 levels deep, naming its field, whatever the size bound", () => {
    const nested = (depth: number): unknown => JSON.parse(`${"[".repeat(depth)}1${"]".repeat(depth)}`)
    // Thousands of levels: JSON.stringify overflowed the stack and the request was answered 500.
    const deep = { ...track(1), properties: { deep: nested(6000) } }
    const refused = Result.fail(
      new InvalidMessages({
        errors: [{ index: 1, path: "properties", message: "is nested more than 100 levels deep" }]
      })
    )
    expect(validateBatch([track(0), deep])).toStrictEqual(refused)
    expect(validateBatch([track(0), deep], {}, undefined, 1000)).toStrictEqual(refused)
    expect(validateBatch([{ userId: "u", event: "E", context: { a: nested(100) } }], {}, "track")).toStrictEqual(
      Result.fail(
        new InvalidMessages({ errors: [{ path: "context", message: "is nested more than 100 levels deep" }] })
      )
    )
    // `properties` is level 1: 99 arrays inside it reach level 100, the last one allowed.
    expect(Result.isSuccess(validateBatch([{ ...track(0), properties: { a: nested(99) } }]))).toBe(true)
    expect(Result.isFailure(validateBatch([{ ...track(0), properties: { a: nested(100) } }]))).toBe(true)
  })

  it("has no index for the single-message endpoints", () => {
    expect(validateBatch([{ userId: "u" }], {}, "track")).toStrictEqual(
      Result.fail(new InvalidMessages({ errors: [{ path: "event", message: "is missing" }] }))
    )
  })
})
