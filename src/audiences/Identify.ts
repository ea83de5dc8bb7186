import { type DeliveredBody, deliveredBody } from "../domain/DeliveredBody.js"
import { uuidv7 } from "../domain/MessageId.js"
import { stampMessage } from "../domain/Stamp.js"
import type { IdentifyJobBuilder } from "../store/Model.js"

/**
 * The identify that tells a webhook one user property (an audience membership or a computed
 * trait), built exactly as ingest builds a tracking call's: a stamped identify message
 * (`timestamp` = `receivedAt` = `now`, `context` `{}`), then its REFERENCE §3 body.
 */
export const identifyBody = (
  property: string,
  value: unknown,
  userId: string,
  messageId: string,
  now: number
): DeliveredBody =>
  deliveredBody(stampMessage(
    { type: "identify", userId, traits: { [property]: value }, context: {} },
    { receivedAt: now, generatedMessageId: messageId }
  ))

// Placeholders: plain characters, so JSON writes them unescaped and they are found verbatim.
const messageIdMark = "HOOKRELAY-MESSAGE-ID-PLACEHOLDER-5b0f"
const userIdMark = "HOOKRELAY-USER-ID-PLACEHOLDER-5b0f"

/**
 * The JSON text of `identifyBody` (what `encodeBody` encodes) for every user of one property value at one instant, as text pieces around
 * the two per-user fields: the body is built once through the real pipeline with placeholders,
 * then each user's id (JSON-escaped) and message id are put in their places. The result is the
 * same text, byte for byte (tested against the pipeline on arbitrary ids and values), at a
 * fraction of the cost: stamping and building each body was most of a large sync's time.
 * `undefined` when a placeholder is not found exactly once (a
 * trait value containing one): the caller then builds each body in full.
 */
export const identifyTemplate = (
  property: string,
  value: unknown,
  now: number
): ((userId: string, messageId: string) => string) | undefined => {
  const text = JSON.stringify(identifyBody(property, value, userIdMark, messageIdMark, now))
  const messageIdAt = text.indexOf(`"${messageIdMark}"`)
  const userIdAt = text.indexOf(`"${userIdMark}"`)
  if (
    messageIdAt < 0 || userIdAt < 0 || messageIdAt > userIdAt ||
    text.indexOf(messageIdMark, messageIdAt + messageIdMark.length + 1) >= 0 ||
    text.indexOf(userIdMark, userIdAt + userIdMark.length + 1) >= 0 ||
    text.slice(0, messageIdAt).includes(userIdMark)
  ) return undefined
  const head = text.slice(0, messageIdAt + 1)
  const middle = text.slice(messageIdAt + 1 + messageIdMark.length, userIdAt)
  const tail = text.slice(userIdAt + userIdMark.length + 2)
  return (userId, messageId) => head + messageId + middle + JSON.stringify(userId) + tail
}

/**
 * Builds the identify jobs of one chunk: a new UUIDv7 `messageId` per user, and the body's JSON
 * text as `encodeBody` serializes `identifyBody` (through `identifyTemplate`, one per distinct
 * value); the store keeps its UTF-8 bytes.
 */
export const identifyJobs = (property: string, now: number): IdentifyJobBuilder => {
  const templates = new Map<string, ((userId: string, messageId: string) => string) | undefined>()
  return (userId, value) => {
    const messageId = uuidv7(now)
    const key = JSON.stringify(value) ?? "undefined"
    if (!templates.has(key)) {
      // Memberships have two values; a computed trait can have one per user: keep the map small.
      if (templates.size >= 1_000) templates.clear()
      templates.set(key, identifyTemplate(property, value, now))
    }
    const template = templates.get(key)
    return {
      messageId,
      bodyText: template === undefined
        ? JSON.stringify(identifyBody(property, value, userId, messageId, now))
        : template(userId, messageId)
    }
  }
}
