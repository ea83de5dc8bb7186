import { Schema } from "effect"
import type { Effect } from "effect"

/**
 * How an attempt ended, as recorded: an `AttemptOutcome` tag, or `Aborted` when the attempt was interrupted in flight
 * (another URL succeeded first, or shutdown). An aborted request may still have reached the receiver, so it is
 * recorded like any other (REFERENCE §4: every attempt is recorded).
 */
export const RecordedOutcome = Schema.Literals(["Success", "Retryable", "Permanent", "Aborted"])
export type RecordedOutcome = typeof RecordedOutcome.Type

/** One delivery attempt, as the store keeps it (REFERENCE §4). A Schema so the store and the admin API can reuse it. */
export const AttemptRecord = Schema.Struct({
  jobId: Schema.String,
  url: Schema.String,
  /** 1-based, counted per URL across restarts. */
  attemptNumber: Schema.Int,
  /** Epoch ms, from Clock. */
  startedAt: Schema.Number,
  durationMs: Schema.Number,
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
