import { Schema } from "effect"
import type { Effect } from "effect"
import * as Domain from "../domain/AttemptRecord.js"

/**
 * How an attempt ended, as recorded: an `AttemptOutcome` tag, or `Aborted` when the attempt was interrupted in flight
 * (another URL succeeded first, or shutdown). An aborted request may still have reached the receiver, so it is
 * recorded like any other (REFERENCE §4: every attempt is recorded).
 */
export const RecordedOutcome = Schema.Literals(["Success", "Retryable", "Permanent", "Aborted"])
export type RecordedOutcome = typeof RecordedOutcome.Type

const { attempt, durationMs, jobId, startedAt, url } = Domain.AttemptRecord.fields

/**
 * One delivery attempt as it leaves the delivery program, built as a plain object on the hot path: the domain's
 * attempt record (same field schemas) with the outcome's tag and absent parts left out. The dispatcher turns it
 * into `Domain.AttemptRecord` for the store in one mapping.
 */
export const AttemptRecord = Schema.Struct({
  jobId,
  url,
  /** 1-based, counted per URL across restarts. */
  attemptNumber: attempt,
  /** Epoch ms, from Clock. */
  startedAt,
  durationMs,
  outcome: RecordedOutcome,
  status: Schema.optional(Schema.Int),
  /** The failure without (or beyond) a status: timeout, connection, TLS… */
  error: Schema.optional(Schema.String),
  /** The first 1 KB of the response body, as text. */
  responseSnippet: Schema.optional(Schema.String)
})
export type AttemptRecord = typeof AttemptRecord.Type

/** Where attempts go as they finish; the store persists them in batches. It should not block for long. */
export type AttemptSink = (record: AttemptRecord) => Effect.Effect<void>
