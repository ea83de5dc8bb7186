import * as Schema from "effect/Schema"

/** `aborted`: the attempt was cut short on our side (another URL succeeded first, or shutdown). */
export const AttemptOutcome = Schema.Literals(["success", "retryable", "permanent", "aborted"])
export type AttemptOutcome = typeof AttemptOutcome.Type

/**
 * One HTTP attempt, as recorded: the one declaration of its fields. The delivery program emits it, the store keeps
 * and reads it, and the admin view is derived from it (`AdminSchemas.AttemptView`), so a field added here reaches all.
 * Plain `Number`s (not `Int`) keep the admin OpenAPI document as it was.
 */
export const AttemptRecord = Schema.Struct({
  jobId: Schema.String,
  url: Schema.String,
  /** 1-based, counted per URL across restarts. */
  attempt: Schema.Number,
  /** Epoch ms, from Clock. */
  startedAt: Schema.Number,
  durationMs: Schema.Number,
  statusCode: Schema.NullOr(Schema.Number),
  /** The failure without (or beyond) a status: timeout, connection, TLS… */
  error: Schema.NullOr(Schema.String),
  outcome: AttemptOutcome,
  /** The first 1 KB (UTF-8) of the response body, as text; the store cuts it. */
  responseSnippet: Schema.NullOr(Schema.String)
})
export type AttemptRecord = typeof AttemptRecord.Type

type Absent = "statusCode" | "error" | "responseSnippet"

/** An attempt handed to the store: the same record, whose absent parts may be left out. */
export type AttemptRecordInput = Omit<AttemptRecord, Absent> & { readonly [K in Absent]?: AttemptRecord[K] | undefined }
