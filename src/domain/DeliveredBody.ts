import type { StampedMessage } from "./Stamp.js"
import { formatTimestamp, parseIso8601 } from "./Timestamp.js"

/** The JSON object POSTed to each webhook URL (SPEC §3). Key order is fixed: the bytes are signed. */
export type DeliveredBody = { readonly [key: string]: unknown }

const asTimestamp = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const parsed = parseIso8601(value)
  return parsed === undefined ? undefined : formatTimestamp(parsed)
}

const typeFields = (message: StampedMessage): Record<string, unknown> => {
  switch (message.type) {
    case "page":
      return {
        ...(message.name !== undefined && { name: message.name }),
        ...(message.category !== undefined && { category: message.category }),
        properties: message.properties ?? {}
      }
    case "screen":
      return {
        ...(message.name !== undefined && { name: message.name }),
        ...(message.category !== undefined && { category: message.category }),
        ...(message.properties !== undefined && { properties: message.properties })
      }
    case "identify":
      return { traits: message.traits ?? {} }
    case "track":
      return { event: message.event, properties: message.properties ?? {} }
    case "group":
      return { groupId: message.groupId, traits: message.traits ?? {} }
    case "alias":
      return { "Previous ID": message.previousId, "User ID": message.userId }
  }
}

/** Builds the delivered body of a tracking message (all six types; SPEC §3). */
export const deliveredBody = (message: StampedMessage): DeliveredBody => {
  const body: Record<string, unknown> = {
    version: 1,
    type: message.type,
    messageId: message.messageId
  }
  if (message.type !== "alias" && message.userId !== undefined) body.userId = message.userId
  if (message.anonymousId !== undefined) body.anonymousId = message.anonymousId
  Object.assign(body, typeFields(message))
  body.timestamp = asTimestamp(message.timestamp)
  for (const key of ["receivedAt", "sentAt", "originalTimestamp"] as const) {
    const value = asTimestamp(message[key])
    if (value !== undefined) body[key] = value
  }
  body.context = message.context ?? {}
  return body
}

/** The delete notification sent for a deletion request: exactly these three fields, no `version` (SPEC §3). */
export const deleteNotificationBody = (userId: string, requestedAt: number): DeliveredBody => ({
  type: "delete",
  userId,
  timestamp: formatTimestamp(requestedAt)
})

const encoder = new TextEncoder()

/** Serializes a body once; these bytes are both sent and signed. */
export const encodeBody = (body: DeliveredBody): Uint8Array => encoder.encode(JSON.stringify(body))
