import type { StampedMessage } from "./Stamp.js"
import { formatTimestamp, normalizeTimestamp } from "./Timestamp.js"

/** The JSON object POSTed to each webhook URL (REFERENCE §3). Key order is fixed: the bytes are signed. */
export type DeliveredBody = { readonly [key: string]: unknown }

const asTimestamp = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : normalizeTimestamp(value)

/** Builds the delivered body of a tracking message (all six types; REFERENCE §3). */
export const deliveredBody = (message: StampedMessage): DeliveredBody => {
  const body: Record<string, unknown> = {
    version: 1,
    type: message.type,
    messageId: message.messageId
  }
  if (message.type !== "alias" && message.userId !== undefined) body.userId = message.userId
  if (message.anonymousId !== undefined) body.anonymousId = message.anonymousId
  switch (message.type) {
    case "page":
      if (message.name !== undefined) body.name = message.name
      if (message.category !== undefined) body.category = message.category
      body.properties = message.properties ?? {}
      break
    case "screen":
      if (message.name !== undefined) body.name = message.name
      if (message.category !== undefined) body.category = message.category
      if (message.properties !== undefined) body.properties = message.properties
      break
    case "identify":
      body.traits = message.traits ?? {}
      break
    case "track":
      body.event = message.event
      body.properties = message.properties ?? {}
      break
    case "group":
      body.groupId = message.groupId
      body.traits = message.traits ?? {}
      break
    case "alias":
      body["Previous ID"] = message.previousId
      body["User ID"] = message.userId
      break
  }
  body.timestamp = asTimestamp(message.timestamp)
  const receivedAt = asTimestamp(message.receivedAt)
  if (receivedAt !== undefined) body.receivedAt = receivedAt
  const sentAt = asTimestamp(message.sentAt)
  if (sentAt !== undefined) body.sentAt = sentAt
  const originalTimestamp = asTimestamp(message.originalTimestamp)
  if (originalTimestamp !== undefined) body.originalTimestamp = originalTimestamp
  body.context = message.context ?? {}
  return body
}

/** The delete notification sent for a deletion request: exactly these three fields, no `version` (REFERENCE §3). */
export const deleteNotificationBody = (userId: string, requestedAt: number): DeliveredBody => ({
  type: "delete",
  userId,
  timestamp: formatTimestamp(requestedAt)
})

/**
 * Serializes a body once; these bytes are both sent and signed. A small body is a view of Node's shared 8 KiB
 * allocation pool: `TextEncoder` gave each body an ArrayBuffer of its own, to allocate, track and collect, for every
 * ingested message (the store copies the bytes anyway).
 */
export const encodeBody = (body: DeliveredBody): Uint8Array => Buffer.from(JSON.stringify(body), "utf8")
