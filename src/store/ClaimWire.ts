import type { ClaimedJob, JobKind } from "./Model.js"
import { type ClaimTuple, num, numOrNull } from "./Rows.js"

/**
 * A claim's jobs as they cross from the SQLite thread: their fields as one JSON text and their bodies
 * in one buffer, handed over without a copy. Cloned as objects, each body was an ArrayBuffer of its
 * own to copy and to collect.
 */
export interface ClaimWire {
  /** Per job: id, source, message id, user id, kind, created, first attempt, due, attempts, endpoint state (JSON
   * text or null), lease end, and where its body ends in `bodies`. */
  readonly fields: string
  readonly bodies: Uint8Array<ArrayBuffer>
}

type WireRow = [
  string,
  string,
  string,
  string | null,
  string,
  number,
  number | null,
  number,
  number,
  string | null,
  number,
  number
]

/** Encodes claimed rows (in the SQLite thread); transfer `bodies.buffer` with the message. */
export const encodeClaim = (rows: ReadonlyArray<ClaimTuple>): ClaimWire => {
  let size = 0
  for (const row of rows) size += row[5].byteLength
  const bodies = new Uint8Array(size)
  const fields: Array<WireRow> = []
  let end = 0
  for (const [id, sourceId, messageId, userId, kind, body, createdAt, first, due, attempts, state, lease] of rows) {
    bodies.set(body, end)
    end += body.byteLength
    fields.push([
      id,
      sourceId,
      messageId,
      userId,
      kind,
      num(createdAt),
      numOrNull(first),
      num(due),
      num(attempts),
      state,
      num(lease),
      end
    ])
  }
  return { fields: JSON.stringify(fields), bodies }
}

/** The claimed jobs of a wire (in the main thread), in the order they were encoded; bodies are views of one buffer. */
export const decodeClaim = (wire: ClaimWire): Array<ClaimedJob> => {
  const rows = JSON.parse(wire.fields) as Array<WireRow>
  const jobs = new Array<ClaimedJob>(rows.length)
  let start = 0
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    jobs[i] = {
      id: row[0],
      sourceId: row[1],
      messageId: row[2],
      userId: row[3],
      kind: row[4] as JobKind,
      body: wire.bodies.subarray(start, row[11]),
      createdAt: row[5],
      firstAttemptAt: row[6],
      nextDueAt: row[7],
      attemptCount: row[8],
      endpointState: row[9] === null ? null : JSON.parse(row[9]),
      leaseExpiresAt: row[10]
    }
    start = row[11]
  }
  return jobs
}
