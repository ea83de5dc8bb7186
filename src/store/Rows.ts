import type { Types } from "effect"
import { randomBytes } from "node:crypto"
import { webhooksDestinationId } from "../domain/WebhooksDestination.js"
import type { AttemptRecord, ClaimedJob, Completion, EnqueueEntry, JobKind } from "./Model.js"

/**
 * How the store's values become rows and rows become values again: the pure part of the store,
 * shared by the store's modules and the SQLite thread (`sqlite/SqliteTransactions`). It imports no
 * package, so the SQLite thread loads nothing else.
 */

export const dayMs = 24 * 60 * 60 * 1000
export const maxSnippetBytes = 1024
export const maxErrorBytes = 1024

export const idChunk = 500
/** Rows per JSON parameter (attempts, completions): one statement, no parameter limit, a bounded string. */
export const jsonChunk = 1000

export const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size))
  return chunks
}

/** PostgreSQL returns BIGINT and COUNT as bigints (and sums as numeric text); SQLite returns numbers. */
export const num = (value: unknown): number => typeof value === "number" ? value : Number(value)
export const numOrNull = (value: unknown): number | null => value === null || value === undefined ? null : num(value)

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export const cutUtf8 = (value: string, maxBytes: number): string => {
  if (value.length * 3 <= maxBytes) return value
  const bytes = Buffer.from(value, "utf8")
  if (bytes.length <= maxBytes) return value
  let end = maxBytes
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return bytes.subarray(0, end).toString("utf8")
}

export const cutOrNull = (value: string | null | undefined, maxBytes: number): string | null =>
  value === null || value === undefined ? null : cutUtf8(value, maxBytes)

export const utcDay = (epochMs: number): number => Math.floor(epochMs / dayMs)

/**
 * Job ids: 12 hex digits of the creation millisecond, an 8-digit per-generator counter, and a
 * 10-digit random nonce drawn when the generator is made. They sort by creation time (and by
 * insertion order within a generator), so new ids land at the right edge of the primary-key B-tree
 * instead of at random pages (random ids cost several times more per insert on SQLite); the
 * nonce keeps ids unique across generators: processes sharing a PostgreSQL database, and the SQLite
 * thread beside its process.
 */
export const makeJobIds = () => {
  const nonce = randomBytes(5).toString("hex")
  let counter = 0
  return (now: number, count: number): Array<string> => {
    const prefix = Math.max(0, Math.floor(now)).toString(16).padStart(12, "0")
    const ids = new Array<string>(count)
    for (let i = 0; i < count; i++) {
      counter = (counter + 1) % 0x1_0000_0000
      ids[i] = prefix + counter.toString(16).padStart(8, "0") + nonce
    }
    return ids
  }
}

// --- enqueue: which entries become jobs -----------------------------------------------------------

/** Within one request the first occurrence of a message id wins; the others are duplicates. */
export const firstOfEachMessageId = (entries: ReadonlyArray<EnqueueEntry>) => {
  const unique = new Map<string, EnqueueEntry>()
  const duplicateMessageIds: Array<string> = []
  for (const entry of entries) {
    if (unique.has(entry.messageId)) duplicateMessageIds.push(entry.messageId)
    else unique.set(entry.messageId, entry)
  }
  return { unique, duplicateMessageIds }
}

const webhooksOnly: ReadonlyArray<string> = [webhooksDestinationId]

/** Whether `destinationIds` is the default: the destination `webhooks` alone. */
export const isWebhooksOnly = (destinationIds: ReadonlyArray<string>): boolean =>
  destinationIds.length === 1 && destinationIds[0] === webhooksDestinationId

/** The destinations an entry with a body gets a job for: the destination `webhooks` unless it names others. */
export const destinationsOf = (entry: EnqueueEntry): ReadonlyArray<string> => entry.destinationIds ?? webhooksOnly

/**
 * After the dedupe upsert: an entry not `accepted` was seen within 24 h (appended to
 * `duplicateMessageIds`); an accepted one with a body becomes a job, one without was filtered.
 */
export const sortOutSeen = (
  unique: ReadonlyMap<string, EnqueueEntry>,
  accepted: ReadonlySet<string>,
  duplicateMessageIds: Array<string>
) => {
  const withBody: Array<EnqueueEntry & { readonly body: Uint8Array }> = []
  let filtered = 0
  for (const entry of unique.values()) {
    if (!accepted.has(entry.messageId)) duplicateMessageIds.push(entry.messageId)
    else if (entry.body !== undefined) withBody.push(entry as EnqueueEntry & { readonly body: Uint8Array })
    else if (entry.filtered === true) filtered++
  }
  return { withBody, filtered }
}

// --- claims -----------------------------------------------------------------------------------

export interface ClaimRow {
  readonly id: string
  readonly source_id: string
  readonly destination_id: string
  readonly message_id: string
  readonly user_id: string | null
  readonly kind: string
  readonly body: Uint8Array
  readonly created_at: unknown
  readonly first_attempt_at: unknown
  readonly next_due_at: unknown
  readonly attempts: unknown
  readonly endpoint_state: string | null
  readonly lease_expires_at: unknown
  readonly trace_parent: string | null
}

/**
 * A claimed row as the SQLite thread reads it (`claimTupleColumns`, a statement in raw mode): its fields as one JSON
 * array text, `[id, source, message id, user id, kind, created, first attempt, due, attempts, endpoint state (JSON text
 * or null), lease end, body length, destination]`, and its body. better-sqlite3 builds each raw row with one generic property store
 * per column: two columns instead of twelve make the claim cheaper, and the wire's JSON is the rows' texts joined
 * (bench/NOTES.md, "Claims return two columns").
 */
export type ClaimTuple = readonly [fields: string, body: Uint8Array]

/**
 * A job's body: its own, or its message's when the message has several jobs (`message_bodies`, migration 13). The
 * look-up is made only for such a job.
 */
const jobBody =
  "CASE WHEN body_id IS NULL THEN body ELSE (SELECT b.body FROM message_bodies AS b WHERE b.id = jobs.body_id) END"

export const claimColumns =
  `id, source_id, destination_id, message_id, user_id, kind, ${jobBody} AS body, created_at, first_attempt_at, next_due_at, attempts, endpoint_state, lease_expires_at, trace_parent`

const claimFields = (withTraceParent: boolean) =>
  `json_array(id, source_id, message_id, user_id, kind, created_at, first_attempt_at, next_due_at, attempts,
    endpoint_state, lease_expires_at, length(${jobBody}), destination_id${withTraceParent ? ", trace_parent" : ""})`

/**
 * What the SQLite thread's claim returns per row: see `ClaimTuple`. A job's trace context, when it has one, is a 14th
 * field; a job without one (telemetry off) costs the claim a NULL test, not a column or a byte on the wire. One
 * `json_array` either way: appending with `json_insert` parsed the array's text again.
 */
export const claimTupleColumns = `iif(trace_parent IS NULL, ${claimFields(false)}, ${claimFields(true)}), ${jobBody}`

export const toClaimed = (row: ClaimRow): ClaimedJob => {
  const job: Types.Mutable<ClaimedJob> = {
    id: row.id,
    sourceId: row.source_id,
    destinationId: row.destination_id,
    messageId: row.message_id,
    userId: row.user_id,
    kind: row.kind as JobKind,
    body: row.body,
    createdAt: num(row.created_at),
    firstAttemptAt: numOrNull(row.first_attempt_at),
    nextDueAt: num(row.next_due_at),
    attemptCount: num(row.attempts),
    endpointState: row.endpoint_state === null ? null : JSON.parse(row.endpoint_state),
    leaseExpiresAt: num(row.lease_expires_at)
  }
  // Only a job with a trace context gets the property: without telemetry the claimed jobs keep their shape.
  if (row.trace_parent !== null) job.traceparent = row.trace_parent
  return job
}

/** Claimed rows in due order (RETURNING's order is unspecified), ties by id. */
const dueThenId = (dueA: unknown, idA: string, dueB: unknown, idB: string) =>
  num(dueA) - num(dueB) || (idA < idB ? -1 : idA > idB ? 1 : 0)

export const rowsInDueOrder = (rows: Array<ClaimRow>): Array<ClaimRow> =>
  rows.sort((a, b) => dueThenId(a.next_due_at, a.id, b.next_due_at, b.id))

/** `rowsInDueOrder` for claimed jobs. */
export const jobsInDueOrder = (jobs: Array<ClaimedJob>): Array<ClaimedJob> =>
  jobs.sort((a, b) => dueThenId(a.nextDueAt, a.id, b.nextDueAt, b.id))

// --- completions ------------------------------------------------------------------------------

const encodeState = (state: unknown): string | null => state === undefined ? null : JSON.stringify(state)

/** One completion as a row of the JSON parameter of the batched UPDATE. */
export interface CompletionRow {
  readonly id: string
  readonly status: "delivered" | "pending" | "dead"
  readonly at: number | null
  readonly due: number | null
  readonly first: number | null
  readonly state: string | null
  readonly err: string | null
  /** Attempts recorded for this job in the same call, added to its count by the same UPDATE (set by `completionRows`). */
  inc: number
}

const toCompletionRow = (completion: Completion): CompletionRow => {
  switch (completion._tag) {
    case "Delivered":
      return {
        id: completion.jobId,
        status: "delivered",
        at: completion.at,
        due: null,
        first: completion.firstAttemptAt ?? null,
        state: encodeState(completion.endpointState),
        err: null,
        inc: 0
      }
    case "Retry":
      return {
        id: completion.jobId,
        status: "pending",
        at: null,
        due: completion.nextDueAt,
        first: completion.firstAttemptAt,
        state: encodeState(completion.endpointState),
        err: cutOrNull(completion.lastError, maxErrorBytes),
        inc: 0
      }
    case "Dead":
      return {
        id: completion.jobId,
        status: "dead",
        at: completion.at,
        due: null,
        first: completion.firstAttemptAt ?? null,
        state: encodeState(completion.endpointState),
        err: cutOrNull(completion.lastError, maxErrorBytes),
        inc: 0
      }
  }
}

export const countPerJob = (records: ReadonlyArray<AttemptRecord>): Map<string, number> => {
  const perJob = new Map<string, number>()
  for (const record of records) perJob.set(record.jobId, (perJob.get(record.jobId) ?? 0) + 1)
  return perJob
}

/**
 * A delivery with nothing else to keep (its own, narrower statement): the job, when, its first attempt, the attempts to
 * add, and its source, creation time and destination when the caller gave them (`null`: read from the job).
 */
export type PlainDelivery = readonly [
  id: string,
  at: number,
  first: number | null,
  inc: number,
  sourceId: string | null,
  createdAt: number | null,
  destinationId: string | null
]

/** The rows of one completion batch: the last completion of a job wins (an UPDATE … FROM applies one row per job). */
export const completionRows = (
  completions: ReadonlyArray<Completion>,
  attempts: ReadonlyArray<AttemptRecord> | undefined
) => {
  const lastOfJob = new Map<string, Completion>()
  for (const completion of completions) lastOfJob.set(completion.jobId, completion)
  const increments = countPerJob(attempts ?? [])
  const rows: Array<CompletionRow> = []
  const plain: Array<PlainDelivery> = []
  const other: Array<CompletionRow> = []
  for (const completion of lastOfJob.values()) {
    const row = toCompletionRow(completion)
    row.inc = increments.get(row.id) ?? 0
    rows.push(row)
    if (completion._tag === "Delivered" && row.state === null) {
      const { createdAt, destinationId, sourceId } = completion
      const known = sourceId !== undefined && createdAt !== undefined && destinationId !== undefined
      plain.push([
        row.id,
        completion.at,
        row.first,
        row.inc,
        known ? sourceId : null,
        known ? createdAt : null,
        known ? destinationId : null
      ])
    } else {
      other.push(row)
    }
  }
  return { rows, increments, plain, other }
}

/** One attempt as a row of the JSON parameter of the attempts insert. */
export const attemptRow = (record: AttemptRecord) => [
  record.jobId,
  record.url,
  record.attempt,
  record.startedAt,
  Math.max(0, Math.round(record.durationMs)),
  record.statusCode ?? null,
  cutOrNull(record.error, maxErrorBytes),
  record.outcome,
  cutOrNull(record.responseSnippet, maxSnippetBytes)
]
