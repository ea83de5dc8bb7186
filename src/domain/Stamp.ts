import { copyFields, mergeFields } from "./Merge.js"
import type { JsonObject, Message } from "./Message.js"
import { formatTimestamp, isCanonicalTimestamp, parseIso8601 } from "./Timestamp.js"

/** A message as accepted: it has an id, an event time and the server's receipt time. */
export type StampedMessage = Message & {
  readonly messageId: string
  readonly timestamp: string
  readonly receivedAt: string
}

export interface StampContext {
  /** Server time of receipt, epoch milliseconds. */
  readonly receivedAt: number
  /** Used when the message has no `messageId`. */
  readonly generatedMessageId: string
  /** The batch's `sentAt`; a message-level `sentAt` wins over it. */
  readonly batchSentAt?: string | undefined
}

/**
 * Stamps a validated message the way Segment does (REFERENCE §2): keeps or assigns the message id,
 * sets `receivedAt`, and corrects the device clock's skew: when both `sentAt` and an event time
 * are known, `timestamp := receivedAt − (sentAt − timestamp)` and the device's value moves to
 * `originalTimestamp`. Without an event time the message happened when it was received. Every
 * time is written in the one format of REFERENCE §3; a value already in it is kept as it came.
 */
export const stampMessage = (message: Message, context: StampContext): StampedMessage => {
  const eventText = message.timestamp ?? message.originalTimestamp
  const eventTime = eventText === undefined ? undefined : parseIso8601(eventText)
  const sentText = message.sentAt ?? context.batchSentAt
  const sentAt = sentText === undefined ? undefined : parseIso8601(sentText)
  const receivedAt = formatTimestamp(context.receivedAt)
  // Assigned one by one, as a spread would place them (see Merge.ts for why not a spread).
  const stamped = copyFields(message) as Record<string, unknown>
  stamped.messageId = message.messageId ?? context.generatedMessageId
  stamped.receivedAt = receivedAt
  if (sentAt !== undefined) stamped.sentAt = written(sentText, sentAt)
  if (eventTime === undefined) {
    stamped.timestamp = receivedAt
  } else if (sentAt === undefined) {
    stamped.timestamp = written(eventText, eventTime)
    if (message.originalTimestamp !== undefined) stamped.originalTimestamp = stamped.timestamp
  } else {
    stamped.timestamp = formatTimestamp(context.receivedAt - (sentAt - eventTime))
    stamped.originalTimestamp = written(eventText, eventTime)
  }
  return stamped as StampedMessage
}

/** A time as hookrelay writes it: the text itself when it is already in that form, else `epochMillis` formatted. */
const written = (text: string | undefined, epochMillis: number): string =>
  text !== undefined && isCanonicalTimestamp(text) ? text : formatTimestamp(epochMillis)

/** Batch-level `context` and `integrations` lie under each message's own: the message's keys win (REFERENCE §2). */
export const applyBatchDefaults = (
  message: Record<string, unknown>,
  defaults: { readonly context?: JsonObject | undefined; readonly integrations?: JsonObject | undefined }
): Record<string, unknown> => {
  if (defaults.context === undefined && defaults.integrations === undefined) return message
  const merged = copyFields(message)
  for (const key of ["context", "integrations"] as const) {
    const fallback = defaults[key]
    if (fallback === undefined) continue
    const own = message[key]
    merged[key] = typeof own === "object" && own !== null && !Array.isArray(own)
      ? mergeFields(fallback, own)
      : own ?? fallback
  }
  return merged
}
