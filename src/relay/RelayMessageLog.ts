import { Effect } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import type { MessageLogShape } from "../store/MessageLog.js"
import { type LogStatus, logStatuses, type MessageLogQuery } from "../store/MessageLogQuery.js"
import type { RelayMessagesShape } from "./services/RelayMessages.js"

/** Messages a page of the log holds by default, and at most. */
export const defaultLogLimit = 50
export const maxLogLimit = 1000

const isStatus = (value: string): value is LogStatus => (logStatuses as ReadonlyArray<string>).includes(value)

/** What the store cannot take, each issue naming the query's field (the HTTP parameters have the same names). */
export const logQueryIssues = (query: MessageLogQuery): Array<FieldIssue> => {
  const issues: Array<FieldIssue> = []
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > maxLogLimit) {
    issues.push({ path: "limit", message: `must be a whole number from 1 to ${maxLogLimit}` })
  }
  for (const status of query.statuses ?? []) {
    if (!isStatus(status)) issues.push({ path: "status", message: `must be one of ${logStatuses.join(", ")}` })
  }
  for (const [path, time] of [["since", query.since], ["until", query.until]] as const) {
    if (time !== undefined && !Number.isFinite(time)) issues.push({ path, message: "must be a time" })
  }
  return issues
}

/**
 * The listing of the message log, checked before the store is asked; a cursor the store did not write is refused as
 * the request's `after`.
 */
export const listMessages = (log: MessageLogShape): RelayMessagesShape["listMessages"] => (query) =>
  Effect.gen(function*() {
    const issues = logQueryIssues(query)
    if (issues.length > 0) return yield* new InvalidAdminRequest({ errors: issues })
    return yield* log.listMessages(query).pipe(
      Effect.catchTag("BadCursor", () =>
        Effect.fail(
          new InvalidAdminRequest({
            errors: [{ path: "after", message: "is not a cursor of this listing (use the `next` of its last page)" }]
          })
        ))
    )
  })
