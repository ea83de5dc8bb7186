import { Schema } from "effect"
import { logStatuses } from "../store/MessageLogQuery.js"
import { QueryValue, Timestamp } from "./AdminSchemas.js"

/**
 * The message log's listing (REFERENCE §12) as the admin API shows it: its query parameters and its page. A message's
 * jobs and attempts stay in `MessageJobs` (`GET /admin/messages/{id}`).
 */

const statusList = logStatuses.join(", ")

const repeatable = (description: string) =>
  Schema.optional(QueryValue.annotate({ description: `${description}; repeat it to match any of several values` }))

const once = (description: string) => Schema.optional(QueryValue.annotate({ description }))

/** The listing's query parameters; the handler reads and checks each (`AdminMessageRoutes`). */
export const MessageLogParams = {
  sourceId: repeatable("messages received through this source"),
  destinationId: repeatable("messages with a job at this destination"),
  status: repeatable(`messages with a destination in this state (${statusList}; \`filtered\`: no destination)`),
  type: repeatable("messages of this type (track, identify, page, screen, group, alias)"),
  event: repeatable("track messages with this event name"),
  userId: repeatable("messages of this user id"),
  anonymousId: repeatable("messages of this anonymous id"),
  since: once("received at or after this time (ISO 8601)"),
  until: once("received before this time (ISO 8601)"),
  after: once("the `next` of the page before; absent: the newest messages"),
  limit: once("a whole number; default 50, at most 1000")
}

const JobState = Schema.Literals(["pending", "delivering", "delivered", "dead"])

export const LogDestinationView = Schema.Struct({
  destinationId: Schema.String,
  jobId: Schema.String,
  /** `pending`: no attempt yet; `delivering`: attempted, waiting for a retry or in flight. */
  status: JobState,
  attempts: Schema.Number,
  lastAttempt: Schema.NullOr(Schema.Struct({
    statusCode: Schema.NullOr(Schema.Number).annotate({ description: "null: no answer (timeout, connection)" }),
    at: Timestamp
  }))
}).annotate({ identifier: "LogDestination" })

export const LogMessageView = Schema.Struct({
  messageId: Schema.String,
  sourceId: Schema.String,
  type: Schema.String,
  event: Schema.NullOr(Schema.String),
  userId: Schema.NullOr(Schema.String),
  anonymousId: Schema.NullOr(Schema.String),
  receivedAt: Timestamp,
  destinations: Schema.Array(LogDestinationView).annotate({
    description: "one per destination the message went to; empty: filtered (it went nowhere)"
  })
}).annotate({ identifier: "LogMessage" })

export const MessageLogPageView = Schema.Struct({
  messages: Schema.Array(LogMessageView),
  next: Schema.NullOr(Schema.String).annotate({
    description: "the cursor of the next (older) page, for `after`; null on the last page"
  })
}).annotate({ identifier: "MessageLogPage" })
