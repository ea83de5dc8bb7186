import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { decodeWithIssues } from "../../src/domain/Issues.js"
import {
  Alias,
  decodeMessage,
  Group,
  Identify,
  type MessageType,
  messageTypes,
  Page,
  Screen,
  Track
} from "../../src/domain/Message.js"

const issuesOf = (input: unknown, type?: MessageType) => {
  const result = decodeMessage(input, type)
  if (Result.isSuccess(result)) throw new Error(`expected ${JSON.stringify(input)} to be refused`)
  return result.failure
}

describe("decodeMessage (REFERENCE §2 validation)", () => {
  it.each(["identify", "track", "page", "screen", "group"] as const)(
    "%s without userId and anonymousId is refused on userId",
    (type) => {
      const fields = type === "track" ? { event: "E" } : type === "group" ? { groupId: "g" } : {}
      expect(issuesOf({ type, ...fields })).toStrictEqual([
        { path: "userId", message: "userId or anonymousId is required" }
      ])
    }
  )

  it("track without an event, or with an empty one, names event", () => {
    expect(issuesOf({ userId: "u" }, "track")).toStrictEqual([{ path: "event", message: "is missing" }])
    expect(issuesOf({ userId: "u", event: "" }, "track")).toStrictEqual([
      { path: "event", message: "must be a non-empty string" }
    ])
  })

  it("group without groupId names groupId", () => {
    expect(issuesOf({ type: "group", userId: "u" })).toStrictEqual([{ path: "groupId", message: "is missing" }])
  })

  it("alias needs previousId and userId", () => {
    expect(issuesOf({ type: "alias", userId: "u" })).toStrictEqual([{ path: "previousId", message: "is missing" }])
    expect(issuesOf({ type: "alias", previousId: "p", anonymousId: "a" })).toStrictEqual([
      { path: "userId", message: "userId is required for alias" }
    ])
  })

  it.each(["timestamp", "sentAt", "originalTimestamp"])("%s must be ISO 8601", (field) => {
    for (const bad of ["yesterday", "March 7, 2020", "2020-13-01T00:00:00Z", "1700000000", "2020-01-01T25:00:00Z"]) {
      expect(issuesOf({ userId: "u", [field]: bad }, "identify")).toStrictEqual([
        { path: field, message: "must be an ISO 8601 date-time" }
      ])
    }
  })

  it.each(["context", "integrations", "properties"])("%s must be an object when present", (field) => {
    for (const bad of [[], "x", 3, true]) {
      expect(issuesOf({ userId: "u", event: "E", [field]: bad }, "track")).toStrictEqual([
        { path: field, message: "must be an object" }
      ])
    }
  })

  it("traits must be an object when present", () => {
    expect(issuesOf({ userId: "u", traits: [1] }, "identify")).toStrictEqual([
      { path: "traits", message: "must be an object" }
    ])
  })

  it("a messageId longer than 100 characters is refused", () => {
    expect(issuesOf({ userId: "u", messageId: "m".repeat(101) }, "identify")).toStrictEqual([
      { path: "messageId", message: "must be at most 100 characters" }
    ])
    expect(Result.isSuccess(decodeMessage({ userId: "u", messageId: "m".repeat(100) }, "identify"))).toBe(true)
  })

  it("a type that disagrees with the endpoint is refused", () => {
    expect(issuesOf({ type: "identify", userId: "u", event: "E" }, "track")).toStrictEqual([
      { path: "type", message: "must be \"track\" on this endpoint" }
    ])
  })

  it("a batch item needs a known type", () => {
    expect(issuesOf({ userId: "u" })).toStrictEqual([
      { path: "type", message: "must be one of identify, track, page, screen, group, alias" }
    ])
    expect(issuesOf({ type: "delete", userId: "u" })[0]!.path).toBe("type")
  })

  it("a body that is not an object is refused as a whole", () => {
    for (const bad of [null, [], "x", 1]) {
      expect(issuesOf(bad, "track")).toStrictEqual([{ path: "", message: "must be a JSON object" }])
    }
  })

  it("reports every bad field at once", () => {
    const paths = issuesOf({ userId: "u", properties: "x", context: 1 }, "track").map((issue) => issue.path)
    expect(paths.sort()).toStrictEqual(["context", "event", "properties"])
  })
})

describe("decodeMessage (REFERENCE §2 tolerance)", () => {
  it("keeps unknown fields and turns numeric identifiers into strings", () => {
    const message = Result.getOrThrow(decodeMessage(
      {
        type: "group",
        userId: 42,
        anonymousId: 7.5,
        groupId: 1001,
        _metadata: { bundled: ["Segment.io"] },
        channel: "server",
        timestamp: "2026-11-21T10:03:04.120+01:00"
      }
    ))
    expect(message).toStrictEqual({
      type: "group",
      userId: "42",
      anonymousId: "7.5",
      groupId: "1001",
      _metadata: { bundled: ["Segment.io"] },
      channel: "server",
      timestamp: "2026-11-21T10:03:04.120+01:00"
    })
  })

  it("treats null fields as absent (analytics.js sends userId: null)", () => {
    const message = Result.getOrThrow(decodeMessage({ userId: null, anonymousId: "a", traits: null }, "identify"))
    expect(message).toStrictEqual({ type: "identify", anonymousId: "a" })
  })

  it("reads a message's own fields only, never one its object inherits", () => {
    const inheriting = (inherited: object, own: object) => Object.assign(Object.create(inherited) as object, own)
    expect(issuesOf(inheriting({ userId: "u" }, { type: "track", event: "E" }))).toStrictEqual([
      { path: "userId", message: "userId or anonymousId is required" }
    ])
    const message = Result.getOrThrow(
      decodeMessage(inheriting({ traits: "not an object" }, { userId: "u" }), "identify")
    )
    expect(message).toStrictEqual({ type: "identify", userId: "u" })
  })

  it("names what a field that is not of its type got", () => {
    expect(issuesOf({ userId: "u", event: 3 }, "track")).toStrictEqual([
      { path: "event", message: "Expected string, actual 3" }
    ])
    expect(issuesOf({ userId: Infinity, event: "E" }, "track")).toStrictEqual([
      { path: "userId", message: "Expected a finite number, actual Infinity" }
    ])
  })

  it("accepts previousId and groupId given as numbers", () => {
    expect(Result.getOrThrow(decodeMessage({ type: "alias", userId: "u", previousId: 12 }))).toMatchObject({
      previousId: "12"
    })
  })
})

describe("decodeMessage is the schemas' decode, keeping unknown fields", () => {
  // The reference: each schema decoded the plain way, every error, unknown keys preserved by Schema itself.
  const reference: Record<MessageType, (input: unknown) => Result.Result<unknown, ReadonlyArray<unknown>>> = {
    identify: decodeWithIssues(Identify),
    track: decodeWithIssues(Track),
    page: decodeWithIssues(Page),
    screen: decodeWithIssues(Screen),
    group: decodeWithIssues(Group),
    alias: decodeWithIssues(Alias)
  }
  const value = fc.oneof(
    fc.constantFrom("", "u-1", "2026-11-21T09:03:04.120Z", "2026-11-21T10:03:04+01:00", "yesterday", "m".repeat(101)),
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
    fc.array(fc.integer(), { maxLength: 2 })
  )
  const known = [
    "type",
    "messageId",
    "userId",
    "anonymousId",
    "timestamp",
    "sentAt",
    "originalTimestamp",
    "context",
    "integrations",
    "traits",
    "event",
    "properties",
    "name",
    "category",
    "groupId",
    "previousId"
  ]
  // A valid message of the type, some of its fields then replaced (often with something invalid), unknown ones added.
  const valid = { userId: "u-1", event: "E", groupId: "g-1", previousId: "p-1" }
  const message = fc.tuple(
    fc.constantFrom(...messageTypes),
    fc.dictionary(fc.constantFrom(...known, "_metadata", "channel", "extra"), value, { maxKeys: 3 }),
    fc.dictionary(fc.string(), value, { maxKeys: 2 })
  ).map(([type, fields, unknown]) => ({ ...unknown, ...valid, ...fields, type }))

  it("accepts and refuses what the schema does, with the same issues and the same fields", () => {
    fc.assert(
      fc.property(message, (input) => {
        const actual = decodeMessage(input)
        // The one deliberate difference: a `__proto__` key (fc.string() finds it) is refused, where Schema would make
        // it the decoded message's prototype (Merge.test.ts shows why).
        if (Object.prototype.hasOwnProperty.call(input, "__proto__")) {
          expect(actual).toStrictEqual(Result.fail([{ path: "__proto__", message: "is not allowed" }]))
          return
        }
        const present = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== null && v !== undefined))
        const expected = reference[input.type](present)
        expect(actual._tag).toBe(expected._tag)
        // A new object, never the caller's: the client library stamps the decoded message in place.
        if (Result.isSuccess(actual)) expect(actual.success).not.toBe(input)
        if (Result.isSuccess(expected) && Result.isSuccess(actual)) {
          expect(actual.success).toStrictEqual(expected.success)
        }
        if (Result.isFailure(expected) && Result.isFailure(actual)) {
          expect(actual.failure).toStrictEqual(expected.failure)
        }
      }),
      { numRuns: 1000 }
    )
  }, 30_000)

  it("the same on an endpoint of one type (`/v1/track`), its type given or not in the body", () => {
    fc.assert(
      fc.property(message, fc.boolean(), (typed, withType) => {
        if (Object.prototype.hasOwnProperty.call(typed, "__proto__")) return
        const { type, ...fields } = typed
        const input = withType ? typed : fields
        const actual = decodeMessage(input, type)
        if (Result.isSuccess(actual)) expect(actual.success).not.toBe(input)
        const present = Object.fromEntries(Object.entries(typed).filter(([, v]) => v !== null && v !== undefined))
        const expected = reference[type](present)
        expect(actual._tag).toBe(expected._tag)
        if (Result.isSuccess(expected) && Result.isSuccess(actual)) {
          expect(actual.success).toStrictEqual(expected.success)
        }
        if (Result.isFailure(expected) && Result.isFailure(actual)) {
          expect(actual.failure).toStrictEqual(expected.failure)
        }
      }),
      { numRuns: 1000 }
    )
  }, 30_000)
})
