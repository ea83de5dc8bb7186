import type { JsonObject, Message } from "./Message.js"
import { formatTimestamp, parseIso8601 } from "./Timestamp.js"

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

const normalize = (value: string | undefined): number | undefined =>
  value === undefined ? undefined : parseIso8601(value)

/**
 * Stamps a validated message the way Segment does (SPEC §2): keeps or assigns the message id,
 * sets `receivedAt`, and corrects the device clock's skew: when both `sentAt` and an event time
 * are known, `timestamp := receivedAt − (sentAt − timestamp)` and the device's value moves to
 * `originalTimestamp`. Without an event time the message happened when it was received.
 */
export const stampMessage = (message: Message, context: StampContext): StampedMessage => {
  const eventTime = normalize(message.timestamp ?? message.originalTimestamp)
  const sentAt = normalize(message.sentAt ?? context.batchSentAt)
  const stamped: Record<string, unknown> = {
    ...message,
    messageId: message.messageId ?? context.generatedMessageId,
    receivedAt: formatTimestamp(context.receivedAt)
  }
  if (sentAt !== undefined) stamped.sentAt = formatTimestamp(sentAt)
  if (eventTime === undefined) {
    stamped.timestamp = formatTimestamp(context.receivedAt)
  } else if (sentAt === undefined) {
    stamped.timestamp = formatTimestamp(eventTime)
    if (message.originalTimestamp !== undefined) stamped.originalTimestamp = formatTimestamp(eventTime)
  } else {
    stamped.timestamp = formatTimestamp(context.receivedAt - (sentAt - eventTime))
    stamped.originalTimestamp = formatTimestamp(eventTime)
  }
  return stamped as StampedMessage
}

/** Batch-level `context` and `integrations` lie under each message's own: the message's keys win (SPEC §2). */
export const applyBatchDefaults = (
  message: Record<string, unknown>,
  defaults: { readonly context?: JsonObject | undefined; readonly integrations?: JsonObject | undefined }
): Record<string, unknown> => {
  const merged = { ...message }
  for (const key of ["context", "integrations"] as const) {
    const fallback = defaults[key]
    if (fallback === undefined) continue
    const own = message[key]
    merged[key] = typeof own === "object" && own !== null && !Array.isArray(own)
      ? { ...fallback, ...own }
      : own ?? fallback
  }
  return merged
}
