import type { EnqueueEntry } from "../Model.js"
import { isWebhooksOnly } from "../Rows.js"
import type { EnqueueRequest } from "./SqliteRequests.js"

/**
 * A request's messages as they cross to the SQLite thread: their fields as one JSON text and their bodies in one
 * buffer, handed over without a copy. Cloned as objects, each body was an ArrayBuffer of its own to serialize, copy
 * and collect on both sides (bench/NOTES.md, "Wire codecs to the thread").
 */
export interface EnqueueWire {
  readonly sourceId: string
  readonly now: number
  readonly options: EnqueueRequest["options"]
  /** How many entries `fields` holds. */
  readonly rows: number
  /** Per entry: message id, user id, type, event, filtered, where its body ends in `bodies` (or `noBody`,
   * `notBytes`), its destinations (null: the destination `webhooks` alone) and anonymous id. */
  readonly fields: string
  readonly bodies: Uint8Array<ArrayBuffer>
}

type WireEntry = [
  string,
  string | null,
  string | null,
  string | null,
  boolean,
  number,
  ReadonlyArray<string> | null,
  string | null
]

const noBody = -1
/**
 * A body that is not bytes (from a caller outside the types) reaches the transaction as NULL, which the job row
 * refuses: the whole request fails and rolls back, as when such a value was cloned to the thread and failed to bind.
 */
const notBytes = -2

/** Encodes a request (in the main thread); transfer `bodies.buffer` with the message. */
export const encodeEnqueue = (request: EnqueueRequest): EnqueueWire => {
  let size = 0
  for (const entry of request.entries) if (entry.body instanceof Uint8Array) size += entry.body.byteLength
  const bodies = new Uint8Array(size)
  const fields = new Array<WireEntry>(request.entries.length)
  let end = 0
  for (let i = 0; i < request.entries.length; i++) {
    const entry = request.entries[i]!
    let bodyEnd = entry.body === undefined ? noBody : notBytes
    if (entry.body instanceof Uint8Array) {
      bodies.set(entry.body, end)
      end += entry.body.byteLength
      bodyEnd = end
    }
    fields[i] = [
      entry.messageId,
      entry.userId ?? null,
      entry.type ?? null,
      entry.event ?? null,
      entry.filtered === true,
      bodyEnd,
      // The common case, the destination `webhooks` alone, crosses as its default.
      entry.destinationIds === undefined || isWebhooksOnly(entry.destinationIds) ? null : entry.destinationIds,
      entry.anonymousId ?? null
    ]
  }
  return {
    sourceId: request.sourceId,
    now: request.now,
    options: request.options,
    rows: fields.length,
    fields: JSON.stringify(fields),
    bodies
  }
}

/** The request of a wire (in the SQLite thread), entries in their order; bodies are views of one buffer. */
export const decodeEnqueue = (wire: EnqueueWire): EnqueueRequest => {
  const rows = JSON.parse(wire.fields) as Array<WireEntry>
  const entries = new Array<EnqueueEntry>(rows.length)
  let start = 0
  for (let i = 0; i < rows.length; i++) {
    const [messageId, userId, type, event, filtered, bodyEnd, destinationIds, anonymousId] = rows[i]!
    let body: Uint8Array | undefined = undefined
    if (bodyEnd >= 0) {
      body = wire.bodies.subarray(start, bodyEnd)
      start = bodyEnd
    } else if (bodyEnd === notBytes) {
      body = null as unknown as Uint8Array
    }
    entries[i] = {
      messageId,
      userId: userId ?? undefined,
      type: type ?? undefined,
      event: event ?? undefined,
      filtered,
      body,
      ...(destinationIds !== null && { destinationIds }),
      ...(typeof anonymousId === "string" && { anonymousId })
    }
  }
  return { sourceId: wire.sourceId, now: wire.now, options: wire.options, entries }
}
