import { Schema } from "effect"
import { HttpApiMiddleware, HttpApiSchema } from "effect/http-api"
import { AttemptRecord } from "../domain/AttemptRecord.js"
import { MessageIssue } from "../domain/IngestErrors.js"

/**
 * The bodies of the admin API (REFERENCE §5–§7, §11), as Schema: what `AdminContract` describes and the
 * OpenAPI document shows. The handlers' views are typed by them (`AdminViews`), so a field the
 * handlers add or drop is a type error until the contract says so too.
 */

export const Timestamp = Schema.NullOr(Schema.String).annotate({ description: "ISO 8601, UTC" })

/** The JSON error answer of every admin endpoint, for one status and its codes. */
export const failure = <const Codes extends readonly [string, ...Array<string>]>(
  status: number,
  identifier: string,
  description: string,
  codes: Codes
) =>
  Schema.Struct({
    success: Schema.Literal(false),
    code: Schema.Literals(codes),
    message: Schema.String,
    errors: Schema.Array(MessageIssue)
  }).annotate({ identifier, description }).pipe(HttpApiSchema.status(status))

export const Unauthorized = failure(401, "Unauthorized", "missing or wrong bearer token", ["unauthorized"])
export const Forbidden = failure(
  403,
  "Forbidden",
  "the key lacks the route's scope, or is limited to sources and the route spans every source",
  ["forbidden"]
)
export const AdminDisabled = failure(404, "AdminDisabled", "HOOKRELAY_ADMIN_TOKEN is not set", ["admin_disabled"])
export const NotFound = failure(404, "NotFound", "no such source, message, job or deletion", ["not_found"])
export const InvalidRequest = failure(400, "InvalidRequest", "a field or parameter is invalid; `errors` names it", [
  "invalid_request",
  "invalid_settings",
  "invalid_json",
  "unknown_sources",
  "unreadable_body"
])
export const Conflict = failure(409, "Conflict", "the request conflicts with the current state", [
  "write_key_conflict",
  "destination_deleted",
  "sync_in_progress",
  "sync_interrupted",
  "property_taken"
])
export const PayloadTooLarge = failure(413, "PayloadTooLarge", "the body is over the endpoint's limit", [
  "payload_too_large"
])
export const UnsupportedEncoding = failure(415, "UnsupportedEncoding", "unsupported Content-Encoding", [
  "unsupported_encoding"
])
export const StoreUnavailable = failure(503, "StoreUnavailable", "the store cannot be reached", ["store_unavailable"])

/**
 * A query parameter's value, or its values when it is repeated: the handler reads them and refuses a repeated one,
 * naming it, as it refuses any other value it cannot take.
 */
export const QueryValue = Schema.Union([Schema.String, Schema.Array(Schema.String)])

/**
 * A route's query parameters that do not decode: answered `InvalidRequest`, naming the parameter (`AdminAuth` maps the
 * schema's refusal). Only on routes with a query; their handlers check the values further themselves.
 */
export class QueryDecoding extends HttpApiMiddleware.Service<QueryDecoding>()("hookrelay/QueryDecoding", {
  error: InvalidRequest
}) {}

const JobStatus = Schema.Literals(["pending", "delivering", "delivered", "dead"])

export const JobView = Schema.Struct({
  id: Schema.String,
  sourceId: Schema.String,
  destinationId: Schema.String,
  messageId: Schema.String,
  userId: Schema.NullOr(Schema.String),
  kind: Schema.Literals(["message", "delete", "audience"]),
  status: JobStatus,
  createdAt: Timestamp,
  firstAttemptAt: Timestamp,
  nextDueAt: Timestamp,
  attemptCount: Schema.Number,
  finishedAt: Timestamp,
  lastError: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Job" })

/** The domain's attempt record as the admin API shows it: without its job id (the job holds it), started at in ISO. */
export const AttemptView = AttemptRecord.mapFields(({ jobId: _jobId, ...fields }) => ({
  ...fields,
  startedAt: Timestamp
})).annotate({ identifier: "Attempt" })

export const JobWithAttemptsView = Schema.Struct({
  ...JobView.fields,
  attempts: Schema.Array(AttemptView)
}).annotate({ identifier: "JobWithAttempts" })

export const MessageView = Schema.Struct({
  messageId: Schema.String,
  sourceId: Schema.String,
  userId: Schema.NullOr(Schema.String),
  type: Schema.NullOr(Schema.String),
  event: Schema.NullOr(Schema.String),
  receivedAt: Timestamp,
  jobs: Schema.Array(JobWithAttemptsView)
}).annotate({ identifier: "Message" })

export const MessageList = Schema.Struct({ messages: Schema.Array(MessageView) })

export const MessageJobs = Schema.Struct({ messageId: Schema.String, jobs: Schema.Array(JobWithAttemptsView) })

export const DeadLetters = Schema.Struct({ deadLetters: Schema.Array(JobView) })

export const Replayed = Schema.Struct({
  success: Schema.Literal(true),
  jobId: Schema.String,
  status: Schema.Literal("pending")
}).pipe(HttpApiSchema.status(202))

export const UsageView = Schema.Struct({
  sourceId: Schema.String,
  /** Present when the jobs' counters are one destination's. */
  destinationId: Schema.optional(Schema.String),
  days: Schema.Array(Schema.Struct({
    day: Schema.String,
    apiCalls: Schema.Number,
    messages: Schema.Number,
    filtered: Schema.Number,
    delivered: Schema.Number,
    dead: Schema.Number,
    averageLatencyMs: Schema.NullOr(Schema.Number)
  }))
}).annotate({ identifier: "Usage" })

export const Backlog = Schema.Struct({
  pending: Schema.Number,
  delivering: Schema.Number,
  delivered: Schema.Number,
  dead: Schema.Number
}).annotate({ identifier: "Backlog" })

export const DeletionInput = Schema.Struct({
  userId: Schema.String,
  sourceIds: Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))
})

export const DeletionCreated = Schema.Struct({ id: Schema.String }).pipe(HttpApiSchema.status(202))

export const DeletionView = Schema.Struct({
  id: Schema.String,
  userId: Schema.String,
  sourceIds: Schema.Array(Schema.String),
  createdAt: Schema.String,
  jobsRemoved: Schema.Number,
  notifications: Schema.Array(Schema.Struct({
    sourceId: Schema.String,
    destinationId: Schema.String,
    jobId: Schema.String,
    status: Schema.Literals(["pending", "delivering", "delivered", "dead", "purged"]),
    attempts: Schema.Number,
    finishedAt: Schema.NullOr(Schema.String)
  }))
}).annotate({ identifier: "Deletion" })

export const AudienceMembers = Schema.Struct({ userIds: Schema.Array(Schema.String) })

export const AudienceSynced = Schema.Struct({
  property: Schema.String,
  added: Schema.Number,
  removed: Schema.Number,
  unchanged: Schema.Number
})

export const TraitValues = Schema.Struct({
  values: Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number, Schema.Boolean, Schema.Null]))
})

export const TraitSynced = Schema.Struct({
  property: Schema.String,
  changed: Schema.Number,
  cleared: Schema.Number,
  unchanged: Schema.Number
})
