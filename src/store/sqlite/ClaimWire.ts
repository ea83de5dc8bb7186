import type { Types } from "effect"
import type { ClaimedJob, JobKind } from "../Model.js"
import { type ClaimTuple, jobsInDueOrder } from "../Rows.js"

/**
 * A claim's jobs as they cross from the SQLite thread: their fields as one JSON text and their bodies
 * in one buffer, handed over without a copy. Cloned as objects, each body was an ArrayBuffer of its
 * own to copy and to collect.
 */
export interface ClaimWire {
  /** A JSON array of each job's fields as SQLite wrote them (`ClaimTuple`); the bodies follow each other in `bodies`
   * in the same order, each as long as its last field says. */
  readonly fields: string
  readonly bodies: Uint8Array<ArrayBuffer>
}

type WireRow = [
  id: string,
  sourceId: string,
  messageId: string,
  userId: string | null,
  kind: string,
  createdAt: number,
  firstAttemptAt: number | null,
  nextDueAt: number,
  attempts: number,
  endpointState: string | null,
  leaseExpiresAt: number,
  bodyLength: number,
  destinationId: string,
  traceparent?: string
]

/** Encodes claimed rows (in the SQLite thread); transfer `bodies.buffer` with the message. */
export const encodeClaim = (rows: ReadonlyArray<ClaimTuple>): ClaimWire => {
  let size = 0
  for (const row of rows) size += row[1].byteLength
  const bodies = new Uint8Array(size)
  const fields = new Array<string>(rows.length)
  let end = 0
  for (let i = 0; i < rows.length; i++) {
    const [text, body] = rows[i]!
    bodies.set(body, end)
    end += body.byteLength
    fields[i] = text
  }
  return { fields: `[${fields.join(",")}]`, bodies }
}

/** The claimed jobs of a wire (in the main thread), in due order; bodies are views of one buffer. */
export const decodeClaim = (wire: ClaimWire): Array<ClaimedJob> => {
  const rows = JSON.parse(wire.fields) as Array<WireRow>
  const jobs = new Array<ClaimedJob>(rows.length)
  let start = 0
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const end = start + row[11]
    const job: Types.Mutable<ClaimedJob> = {
      id: row[0],
      sourceId: row[1],
      destinationId: row[12],
      messageId: row[2],
      userId: row[3],
      kind: row[4] as JobKind,
      body: wire.bodies.subarray(start, end),
      createdAt: row[5],
      firstAttemptAt: row[6],
      nextDueAt: row[7],
      attemptCount: row[8],
      endpointState: row[9] === null ? null : JSON.parse(row[9]),
      leaseExpiresAt: row[10]
    }
    if (row.length > 13) job.traceparent = row[13]!
    jobs[i] = job
    start = end
  }
  return jobsInDueOrder(jobs)
}
