import type { JobKind, JobStatus, JobSummary, StoredAttempt } from "./Model.js"
import { num, numOrNull } from "./Rows.js"

/** A job's row as the admin reads it (no body), and its attempts' rows. */

export interface SummaryRow {
  readonly id: string
  readonly source_id: string
  readonly destination_id: string
  readonly message_id: string
  readonly user_id: string | null
  readonly kind: string
  readonly status: string
  readonly created_at: unknown
  readonly first_attempt_at: unknown
  readonly next_due_at: unknown
  readonly attempts: unknown
  readonly lease_owner: string | null
  readonly lease_expires_at: unknown
  readonly finished_at: unknown
  readonly last_error: string | null
}

export interface AttemptRow {
  readonly job_id: string
  readonly url: string
  readonly attempt: unknown
  readonly started_at: unknown
  readonly duration_ms: unknown
  readonly status_code: unknown
  readonly error: string | null
  readonly outcome: string
  readonly response_snippet: string | null
}

export const summaryColumns =
  "id, source_id, destination_id, message_id, user_id, kind, status, created_at, first_attempt_at, next_due_at, attempts, lease_owner, lease_expires_at, finished_at, last_error"

export const attemptColumns =
  "job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet"

export const toSummary = (row: SummaryRow): JobSummary => ({
  id: row.id,
  sourceId: row.source_id,
  destinationId: row.destination_id,
  messageId: row.message_id,
  userId: row.user_id,
  kind: row.kind as JobKind,
  status: row.status as JobStatus,
  createdAt: num(row.created_at),
  firstAttemptAt: numOrNull(row.first_attempt_at),
  nextDueAt: num(row.next_due_at),
  attemptCount: num(row.attempts),
  leaseOwner: row.lease_owner,
  leaseExpiresAt: numOrNull(row.lease_expires_at),
  finishedAt: numOrNull(row.finished_at),
  lastError: row.last_error
})

export const toAttempt = (row: AttemptRow): StoredAttempt => ({
  jobId: row.job_id,
  url: row.url,
  attempt: num(row.attempt),
  startedAt: num(row.started_at),
  durationMs: num(row.duration_ms),
  statusCode: numOrNull(row.status_code),
  error: row.error,
  outcome: row.outcome as StoredAttempt["outcome"],
  responseSnippet: row.response_snippet
})
