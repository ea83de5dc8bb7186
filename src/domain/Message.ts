import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { decodeWithIssues, type FieldIssue } from "./Issues.js"
import { maxMessageIdLength } from "./Limits.js"
import { copyWith } from "./Merge.js"
import { IsoTimestamp } from "./Timestamp.js"

export const messageTypes = ["identify", "track", "page", "screen", "group", "alias"] as const
export const MessageType = Schema.Literals(messageTypes)
export type MessageType = typeof MessageType.Type

export const isMessageType = (value: unknown): value is MessageType =>
  typeof value === "string" && (messageTypes as ReadonlyArray<string>).includes(value)

/** A user, group or alias identifier: a non-empty string, or a number that becomes its string (REFERENCE §2). */
export const Identifier = Schema.Union([
  Schema.String.check(Schema.isMinLength(1, { message: "must be a non-empty string" })),
  Schema.Finite
]).annotate({ message: "must be a non-empty string or a number" }).pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (value) => String(value), encode: (value) => value })
  )
)

export type JsonObject = { readonly [key: string]: unknown }

// Declared, not `Schema.Record(String, Unknown)`: a Record walks and copies every key of every
// `properties`/`context` object, the largest part of a message, to check values that can be anything.
export const JsonObject = Schema.declare(
  (input: unknown): input is JsonObject => typeof input === "object" && input !== null && !Array.isArray(input),
  { identifier: "JsonObject", message: "must be an object" }
)

const MessageId = Schema.String.check(
  Schema.isMinLength(1, { message: "must be a non-empty string" }),
  Schema.isMaxLength(maxMessageIdLength, { message: `must be at most ${maxMessageIdLength} characters` })
)

const optional = Schema.optionalKey

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

const hasIdentity = Schema.makeFilter((message: { readonly userId?: string; readonly anonymousId?: string }) =>
  message.userId !== undefined || message.anonymousId !== undefined ||
  { path: ["userId"], issue: "userId or anonymousId is required" }
)

const EventName = Schema.String.check(Schema.isMinLength(1, { message: "must be a non-empty string" }))

const OptionalText = optional(Schema.String.annotate({ message: "must be a string" }))

/** Fields a message may carry beyond the known ones (`_metadata`, `channel`, …): kept as received. */
const Extra = [Schema.Record(Schema.String, Schema.Unknown)] as const

/** A message schema: its known fields, any others kept as they came, then its own rules. */
const messageSchema = <const Fields extends Schema.Struct.Fields>(fields: Fields) =>
  Schema.StructWithRest(Schema.Struct(fields), Extra)

export const Identify = messageSchema({
  type: Schema.Literal("identify"),
  ...commonFields,
  traits: optional(JsonObject)
}).check(hasIdentity)

export const Track = messageSchema({
  type: Schema.Literal("track"),
  ...commonFields,
  event: EventName,
  properties: optional(JsonObject)
}).check(hasIdentity)

export const Page = messageSchema({
  type: Schema.Literal("page"),
  ...commonFields,
  name: OptionalText,
  category: OptionalText,
  properties: optional(JsonObject)
}).check(hasIdentity)

export const Screen = messageSchema({
  type: Schema.Literal("screen"),
  ...commonFields,
  name: OptionalText,
  category: OptionalText,
  properties: optional(JsonObject)
}).check(hasIdentity)

export const Group = messageSchema({
  type: Schema.Literal("group"),
  ...commonFields,
  groupId: Identifier,
  traits: optional(JsonObject)
}).check(hasIdentity)

export const Alias = messageSchema({
  type: Schema.Literal("alias"),
  ...commonFields,
  previousId: Identifier
}).check(
  Schema.makeFilter((alias) =>
    alias.userId !== undefined || { path: ["userId"], issue: "userId is required for alias" }
  )
)

export type Identify = typeof Identify.Type
export type Track = typeof Track.Type
export type Page = typeof Page.Type
export type Screen = typeof Screen.Type
export type Group = typeof Group.Type
export type Alias = typeof Alias.Type
/** A validated tracking message of one of the six types (REFERENCE §2). */
export type Message = Identify | Track | Page | Screen | Group | Alias

const decoders: {
  readonly [T in MessageType]: (input: Record<string, unknown>) => Result.Result<Message, ReadonlyArray<FieldIssue>>
} = {
  identify: decodeWithIssues(Identify),
  track: decodeWithIssues(Track),
  page: decodeWithIssues(Page),
  screen: decodeWithIssues(Screen),
  group: decodeWithIssues(Group),
  alias: decodeWithIssues(Alias)
}

// Clients send `null` (analytics.js: `userId: null`) or `undefined` for fields they do not know:
// both count as absent, so that "optional" means one thing to every client. A message is its own fields: Schema
// would read a field the object only inherits, so an object of another prototype is read as a copy of its own.
const withoutAbsentValues = (input: Record<string, unknown>): Record<string, unknown> => {
  const prototype: unknown = Object.getPrototypeOf(input)
  let copy = prototype !== Object.prototype && prototype !== null
  for (const key in input) {
    if (copy) break
    const value = input[key]
    copy = value === null || value === undefined
  }
  if (!copy) return input
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
): Result.Result<Message, ReadonlyArray<FieldIssue>> => {
  if (!isJsonObject(input)) return Result.fail([{ path: "", message: "must be a JSON object" }])
  // JSON.parse keeps a `__proto__` key as data; copied by assignment it becomes an object's prototype, whose fields
  // the checks would then see (a `userId` there passed "userId or anonymousId is required"). Refused outright.
  if (Object.prototype.hasOwnProperty.call(input, "__proto__")) {
    return Result.fail([{ path: "__proto__", message: "is not allowed" }])
  }
  const message = withoutAbsentValues(input)
  const declared = message.type
  if (expectedType !== undefined) {
    if (declared !== undefined && declared !== expectedType) {
      return Result.fail([{ path: "type", message: `must be "${expectedType}" on this endpoint` }])
    }
    return decoders[expectedType](declared === undefined ? copyWith(message, "type", expectedType) : message)
  }
  if (!isMessageType(declared)) {
    return Result.fail([{ path: "type", message: `must be one of ${messageTypes.join(", ")}` }])
  }
  return decoders[declared](message)
}
