import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import { maxMessageBytes } from "../domain/Limits.js"
import { copyFields, copyWith } from "../domain/Merge.js"
import { decodeMessage, isJsonObject, type MessageType } from "../domain/Message.js"
import { formatTimestamp } from "../domain/Timestamp.js"
import { InvalidMessage, MessageTooLarge } from "./ClientErrors.js"
import type { OutgoingMessage } from "./Outcome.js"
import { library } from "./version.js"

/** A user, group or alias id: a string, or a number (sent as its string). */
export type Id = string | number

/** Who did it: `userId`, `anonymousId`, or both. */
export type Identity =
  | { readonly userId: Id; readonly anonymousId?: Id | undefined }
  | { readonly userId?: Id | undefined; readonly anonymousId: Id }

/** A JSON object: `properties`, `traits`, `context`, `integrations`. */
export type Fields = Readonly<Record<string, unknown>>

/** Fields every call may carry. */
export interface CommonParams {
  /** Extra information about the call (`ip`, `userAgent`, `locale`, …); `context.library` is set by the client. */
  readonly context?: Fields | undefined
  /** Which destinations get the message (`{ "Webhooks": false }`; REFERENCE §2). */
  readonly integrations?: Fields | undefined
  /** When it happened (ISO 8601 string or `Date`). Default: now, by Effect's `Clock`. A past time is a historical import and is kept. */
  readonly timestamp?: string | Date | undefined
  /** Unique id of the message, at most 100 characters, for deduplication. Default: a random UUID. */
  readonly messageId?: string | undefined
}

/** `identify`: who the user is. */
export type IdentifyParams = Identity & CommonParams & { readonly traits?: Fields | undefined }

/** `track`: an action the user did. */
export type TrackParams = Identity & CommonParams & {
  /** The action's name, e.g. `"Order Completed"`; non-empty. */
  readonly event: string
  readonly properties?: Fields | undefined
}

/** A page's standard properties, plus any of your own. */
export interface PageProperties {
  readonly url?: string | undefined
  readonly title?: string | undefined
  readonly referrer?: string | undefined
  readonly path?: string | undefined
  readonly [key: string]: unknown
}

/**
 * `page`: a web page view. The page's fields (`url`, `title`, `referrer`, `path`, your own) are its
 * `properties`; `traits` is accepted as another name for them (the name the seed's API and some
 * Segment libraries use) and is delivered as `properties`. Give one of the two: both with different
 * contents are refused (`InvalidMessage`, `path: "traits"`).
 */
export type PageParams = Identity & CommonParams & {
  readonly name?: string | undefined
  readonly category?: string | undefined
  readonly properties?: PageProperties | undefined
  /** The page's properties under another name: sent as `properties`. */
  readonly traits?: PageProperties | undefined
}

/** `screen`: a mobile app screen view. */
export type ScreenParams = Identity & CommonParams & {
  readonly name?: string | undefined
  readonly category?: string | undefined
  readonly properties?: Fields | undefined
}

/** `group`: the user belongs to a group (account, company). */
export type GroupParams = Identity & CommonParams & {
  readonly groupId: Id
  readonly traits?: Fields | undefined
}

/** `alias`: `previousId` and `userId` are the same user. */
export type AliasParams = CommonParams & {
  readonly userId: Id
  readonly previousId: Id
  readonly anonymousId?: Id | undefined
}

/**
 * A message ready to be batched. Its JSON is computed once, measured, and sent as is; only the
 * JSON is kept (a third of the object graph's memory): `messageOf` rebuilds the message for an
 * outcome, and only when someone observes outcomes.
 */
export interface Prepared {
  readonly type: MessageType
  readonly messageId: string
  readonly json: string
  /** UTF-8 length of `json`. */
  readonly bytes: number
  /** Epoch ms of the call, from `Clock`: `retryFor` counts from it. */
  readonly calledAt: number
}

/** The message as it is sent. */
export const messageOf = (prepared: Prepared): OutgoingMessage => JSON.parse(prepared.json) as OutgoingMessage

const invalid = (type: MessageType, path: string, message: string) =>
  Result.fail(new InvalidMessage({ type, path, issues: [{ path, message }] }))

const commonFields = ["type", "userId", "anonymousId", "context", "integrations", "timestamp", "messageId"]

/**
 * The fields each call takes (REFERENCE §9). Any other field is refused rather than sent: the server
 * would store it and deliver nothing of it, so the data would be lost without a word.
 */
const fieldsOf: { readonly [T in MessageType]: ReadonlySet<string> } = {
  identify: new Set([...commonFields, "traits"]),
  track: new Set([...commonFields, "event", "properties"]),
  page: new Set([...commonFields, "name", "category", "properties"]),
  screen: new Set([...commonFields, "name", "category", "properties"]),
  group: new Set([...commonFields, "groupId", "traits"]),
  alias: new Set([...commonFields, "previousId"])
}

const unknownField = (type: MessageType, input: Record<string, unknown>): string | undefined => {
  const known = fieldsOf[type]
  for (const key in input) {
    if (!known.has(key) && input[key] !== undefined && input[key] !== null) return key
  }
  return undefined
}

/** The top-level field whose JSON is the largest: where a message over the limit has its bytes. */
const largestField = (message: object): string => {
  let largest = ""
  let largestLength = -1
  for (const [key, value] of Object.entries(message)) {
    const length = JSON.stringify(value)?.length ?? 0
    if (length > largestLength) {
      largest = key
      largestLength = length
    }
  }
  return largest
}

const sameJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  if (aKeys.length !== bKeys.length) return false
  for (const key of aKeys) {
    if (!Object.prototype.hasOwnProperty.call(b, key)) return false
    if (!sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false
  }
  return true
}

/** A page's `traits` become its `properties` (the delivered page carries `properties` only). */
const pageTraitsAsProperties = (
  input: Record<string, unknown>
): Result.Result<Record<string, unknown>, InvalidMessage> => {
  const traits = input.traits
  if (traits === undefined || traits === null) return Result.succeed(input)
  if (!isJsonObject(traits)) return invalid("page", "traits", "must be an object")
  const properties = input.properties
  if (properties !== undefined && properties !== null && !sameJson(traits, properties)) {
    return invalid(
      "page",
      "traits",
      "is the page's properties under another name: give traits or properties, not both with different contents"
    )
  }
  const moved = copyFields(input)
  delete moved.traits
  moved.properties = traits
  return Result.succeed(moved)
}

/**
 * Validates a call with the domain's message schemas (the server's own rules), stamps it
 * (`messageId`, `timestamp` at `now` unless given, `context.library`) and encodes it once. Never
 * throws: whatever the caller passes, the answer is a message or a typed refusal.
 */
export const prepareMessage = (
  type: MessageType,
  params: unknown,
  now: number
): Result.Result<Prepared, InvalidMessage | MessageTooLarge> => {
  try {
    return prepare(type, params, now)
  } catch (error) {
    // A getter or a proxy that throws while the fields are read.
    return invalid(type, "", `could not be read (${error instanceof Error ? error.message : String(error)})`)
  }
}

const prepare = (
  type: MessageType,
  params: unknown,
  now: number
): Result.Result<Prepared, InvalidMessage | MessageTooLarge> => {
  if (!isJsonObject(params)) return invalid(type, "", "must be an object of the call's fields")
  let input: Record<string, unknown> = params
  if (type === "page") {
    const moved = pageTraitsAsProperties(input)
    if (Result.isFailure(moved)) return Result.fail(moved.failure)
    input = moved.success
  }
  if (input.timestamp instanceof Date) {
    if (Number.isNaN(input.timestamp.getTime())) return invalid(type, "timestamp", "must be a valid date")
    input = copyWith(input, "timestamp", input.timestamp.toISOString())
  }
  const decoded = decodeMessage(input, type)
  if (Result.isFailure(decoded)) {
    const issues = decoded.failure
    return Result.fail(new InvalidMessage({ type, path: issues[0]?.path ?? "", issues }))
  }
  const unknown = unknownField(type, input)
  if (unknown !== undefined) {
    return invalid(type, unknown, `is not a field of a ${type} call (${[...fieldsOf[type]].join(", ")})`)
  }
  // `decodeMessage` returns a new top-level object (it copies its input before decoding), so it is
  // stamped in place: spreading it into yet another object costs memory on the hot path (measured:
  // V8 promotes far more to the old generation). `context` is copied: it may be the caller's.
  const stamped = decoded.success as { messageId?: string; timestamp?: string; context?: object }
  const messageId = stamped.messageId ??= randomUUID()
  stamped.timestamp ??= formatTimestamp(now)
  stamped.context = copyWith(stamped.context ?? {}, "library", library)
  let json: string
  try {
    json = JSON.stringify(stamped)
  } catch (error) {
    return invalid(type, "", `must be serializable as JSON (${error instanceof Error ? error.message : String(error)})`)
  }
  const bytes = Buffer.byteLength(json, "utf8")
  if (bytes > maxMessageBytes) {
    return Result.fail(
      new MessageTooLarge({ type, messageId, path: largestField(stamped), size: bytes, limit: maxMessageBytes })
    )
  }
  return Result.succeed({ type, messageId, json, bytes, calledAt: now })
}
