import { deliveredBody, encodeBody } from "../domain/DeliveredBody.js"
import { uuidv7 } from "../domain/MessageId.js"
import { stampMessage } from "../domain/Stamp.js"
import type { IdentifyJobBuilder } from "../store/Model.js"

/**
 * The identify message that tells a webhook one user property (an audience membership or a
 * computed trait), built exactly as ingest builds a tracking call's: a stamped identify message
 * (a new UUIDv7 `messageId`, `timestamp` = `receivedAt` = `now`, `context` `{}`), its SPEC §3
 * body, serialized once.
 */
export const identifyJobs = (property: string, now: number): IdentifyJobBuilder => (userId, value) => {
  const messageId = uuidv7(now)
  const stamped = stampMessage(
    { type: "identify", userId, traits: { [property]: value }, context: {} },
    { receivedAt: now, generatedMessageId: messageId }
  )
  return { messageId, body: encodeBody(deliveredBody(stamped)) }
}
