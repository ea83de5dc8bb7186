import { Data } from "effect"

/**
 * The operator's message log (REFERENCE §12): what a listing asks for and what it answers. One row per accepted
 * message, filtered ones included, with its state at each destination it went to.
 */

/** A message's state at a destination, from its job there. `filtered` is a message's, not a job's: it has no jobs. */
export type LogStatus = "pending" | "delivering" | "delivered" | "dead" | "filtered"

export const logStatuses: ReadonlyArray<LogStatus> = ["pending", "delivering", "delivered", "dead", "filtered"]

/** A listing: every filter is optional; a filter given several values matches any of them. */
export interface MessageLogQuery {
  readonly sourceIds?: ReadonlyArray<string> | undefined
  readonly destinationIds?: ReadonlyArray<string> | undefined
  readonly statuses?: ReadonlyArray<LogStatus> | undefined
  readonly types?: ReadonlyArray<string> | undefined
  readonly events?: ReadonlyArray<string> | undefined
  readonly userIds?: ReadonlyArray<string> | undefined
  readonly anonymousIds?: ReadonlyArray<string> | undefined
  /** Received at or after (epoch ms). */
  readonly since?: number | undefined
  /** Received before (epoch ms). */
  readonly until?: number | undefined
  /** The `next` of the page before (opaque); absent: the newest messages. */
  readonly after?: string | undefined
  /** 1 to 1000. */
  readonly limit: number
}

/** A message's job at one destination, as the log lists it. */
export interface LogDestination {
  readonly destinationId: string
  readonly jobId: string
  /** `pending`: no attempt yet; `delivering`: attempted, waiting for a retry or in flight. */
  readonly status: Exclude<LogStatus, "filtered">
  readonly attempts: number
  /** The last attempt's HTTP status (null: no answer, e.g. a timeout), and when it started; null before any. */
  readonly lastAttempt: { readonly statusCode: number | null; readonly at: number } | null
}

export interface LogMessage {
  readonly messageId: string
  readonly sourceId: string
  readonly type: string
  readonly event: string | null
  readonly userId: string | null
  readonly anonymousId: string | null
  readonly receivedAt: number
  /** Empty when the message went nowhere (filters, subscriptions, integrations): it is `filtered`. */
  readonly destinations: ReadonlyArray<LogDestination>
}

export interface MessageLogPage {
  readonly messages: ReadonlyArray<LogMessage>
  /** The cursor of the next (older) page, or null when there is none. */
  readonly next: string | null
}

/** An `after` this store did not write (altered, or from another listing's filters): the request names `after`. */
export class BadCursor extends Data.TaggedError("BadCursor")<{ readonly cursor: string }> {}
