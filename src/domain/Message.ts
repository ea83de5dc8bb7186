import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { FieldIssue } from "./Issues.js"
import { maxMessageIdLength } from "./Limits.js"
import { copyWith } from "./Merge.js"
import { structDecoder } from "./StructDecoder.js"
import { IsoTimestamp } from "./Timestamp.js"

export const messageTypes = ["identify", "track", "page", "screen", "group", "alias"] as const
export const MessageType = Schema.Literal(...messageTypes)
export type MessageType = typeof MessageType.Type

export const isMessageType = (value: unknown): value is MessageType =>
  typeof value === "string" && (messageTypes as ReadonlyArray<string>).includes(value)

/** A user, group or alias identifier: a non-empty string, or a number that becomes its string (SPEC §2). */
export const Identifier = Schema.transform(
  Schema.Union(
    Schema.String.pipe(Schema.minLength(1, { message: () => "must be a non-empty string" })),
    Schema.Finite
  ).annotations({ message: () => "must be a non-empty string or a number" }),
  Schema.String,
  { strict: true, decode: (value) => String(value), encode: (value) => value }
)

export type JsonObject = { readonly [key: string]: unknown }

// Declared, not `Schema.Record(String, Unknown)`: a Record walks and copies every key of every
// `properties`/`context` object, the largest part of a message, to check values that can be anything.
export const JsonObject: Schema.Schema<JsonObject> = Schema.declare(
  (input: unknown): input is JsonObject => typeof input === "object" && input !== null && !Array.isArray(input),
  { identifier: "JsonObject", message: () => "must be an object" }
)

const MessageId = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must be a non-empty string" }),
  Schema.maxLength(maxMessageIdLength, { message: () => `must be at most ${maxMessageIdLength} characters` })
)

const optional = <A, I>(schema: Schema.Schema<A, I, never>) => Schema.optionalWith(schema, { exact: true })

const commonFields = {
  messageId: optional(MessageId),
  userId: optional(Identifier),
  anonymousId: optional(Identifier),
  timestamp: optional(IsoTimestamp),
  sentAt: optional(IsoTimestamp),
  originalTimestamp: optional(IsoTimestamp),
  context: optional(JsonObject),
  integrations: optional(JsonObject)
}

const hasIdentity = (message: { readonly userId?: string; readonly anonymousId?: string }) =>
  message.userId !== undefined || message.anonymousId !== undefined ||
  { path: ["userId"], message: "userId or anonymousId is required" }

const EventName = Schema.String.pipe(Schema.minLength(1, { message: () => "must be a non-empty string" }))
  .annotations({ message: () => "must be a non-empty string" })

const OptionalText = optional(Schema.String.annotations({ message: () => "must be a string" }))

export const Identify = Schema.Struct({
  type: Schema.Literal("identify"),
  ...commonFields,
  traits: optional(JsonObject)
}).pipe(Schema.filter(hasIdentity))

export const Track = Schema.Struct({
  type: Schema.Literal("track"),
  ...commonFields,
  event: EventName,
  properties: optional(JsonObject)
}).pipe(Schema.filter(hasIdentity))

export const Page = Schema.Struct({
  type: Schema.Literal("page"),
  ...commonFields,
  name: OptionalText,
  category: OptionalText,
  properties: optional(JsonObject)
}).pipe(Schema.filter(hasIdentity))

export const Screen = Schema.Struct({
  type: Schema.Literal("screen"),
  ...commonFields,
  name: OptionalText,
  category: OptionalText,
  properties: optional(JsonObject)
}).pipe(Schema.filter(hasIdentity))

export const Group = Schema.Struct({
  type: Schema.Literal("group"),
  ...commonFields,
  groupId: Identifier,
  traits: optional(JsonObject)
}).pipe(Schema.filter(hasIdentity))

export const Alias = Schema.Struct({
  type: Schema.Literal("alias"),
  ...commonFields,
  previousId: Identifier
}).pipe(
  Schema.filter((message) =>
    message.userId !== undefined || { path: ["userId"], message: "userId is required for alias" }
  )
)

/** Fields a message may carry beyond the known ones (`_metadata`, `channel`, …): kept as received. */
type Extra = { readonly [key: string]: unknown }

export type Identify = typeof Identify.Type & Extra
export type Track = typeof Track.Type & Extra
export type Page = typeof Page.Type & Extra
export type Screen = typeof Screen.Type & Extra
export type Group = typeof Group.Type & Extra
export type Alias = typeof Alias.Type & Extra
/** A validated tracking message of one of the six types (SPEC §2). */
export type Message = Identify | Track | Page | Screen | Group | Alias

const decoders: {
  readonly [T in MessageType]: (input: Record<string, unknown>) => Either.Either<Message, ReadonlyArray<FieldIssue>>
} = {
  identify: structDecoder(Identify),
  track: structDecoder(Track),
  page: structDecoder(Page),
  screen: structDecoder(Screen),
  group: structDecoder(Group),
  alias: structDecoder(Alias)
}

// Clients send `null` (analytics.js: `userId: null`) or `undefined` for fields they do not know:
// both count as absent, so that "optional" means one thing to every client.
const withoutAbsentValues = (input: Record<string, unknown>): Record<string, unknown> => {
  let absent = false
  for (const key in input) {
    const value = input[key]
    if (value === null || value === undefined) {
      absent = true
      break
    }
  }
  if (!absent) return input
  const present: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) {
    if (value !== null && value !== undefined) present[key] = value
  }
  return present
}

export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Validates one message. `expectedType` is the type fixed by the endpoint (`/v1/track`): a `type`
 * in the body must agree with it. Without it (batch items, the client library) `type` is required.
 */
export const decodeMessage = (
  input: unknown,
  expectedType?: MessageType
): Either.Either<Message, ReadonlyArray<FieldIssue>> => {
  if (!isJsonObject(input)) return Either.left([{ path: "", message: "must be a JSON object" }])
  // JSON.parse keeps a `__proto__` key as data, but Schema's "preserve" decoding copies it by
  // assignment, which makes it the decoded message's prototype: its fields were then seen by the
  // checks (a `userId` there passed "userId or anonymousId is required") and dropped from the JSON.
  if (Object.prototype.hasOwnProperty.call(input, "__proto__")) {
    return Either.left([{ path: "__proto__", message: "is not allowed" }])
  }
  const message = withoutAbsentValues(input)
  const declared = message.type
  if (expectedType !== undefined) {
    if (declared !== undefined && declared !== expectedType) {
      return Either.left([{ path: "type", message: `must be "${expectedType}" on this endpoint` }])
    }
    return decoders[expectedType](declared === undefined ? copyWith(message, "type", expectedType) : message)
  }
  if (!isMessageType(declared)) {
    return Either.left([{ path: "type", message: `must be one of ${messageTypes.join(", ")}` }])
  }
  return decoders[declared](message)
}
