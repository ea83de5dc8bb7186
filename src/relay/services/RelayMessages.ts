import { Context, type Effect } from "effect"
import type { InvalidAdminRequest } from "../../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../../domain/DestinationErrors.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { MessageLogPage, MessageLogQuery } from "../../store/MessageLogQuery.js"
import type { Backlog, JobSummary, JobWithAttempts, MessageRecord, MessageSearch, UsageDay } from "../../store/Model.js"
import type { StoreError } from "../../store/StoreError.js"

export interface RelayMessagesShape {
  /** Every job of a message (one per source it came through) with its attempts. */
  readonly messageJobs: (messageId: string) => Effect.Effect<ReadonlyArray<JobWithAttempts>, StoreError>
  readonly deadLetters: (options: {
    readonly sourceId?: string | undefined
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<JobSummary>, StoreError>
  /**
   * Puts a dead letter back in the outbox with a fresh retry window; `false` when the job is not dead,
   * `UnknownDestination` when its destination is gone (REFERENCE §1a).
   */
  readonly replayDeadLetter: (jobId: string) => Effect.Effect<boolean, UnknownDestination | StoreError>
  readonly backlog: Effect.Effect<Backlog, StoreError>
  /**
   * A source's usage counters (REFERENCE §11) for the last `days` UTC days (1 to 366, default 30),
   * today (by `Clock`) last, oldest first, days without traffic as zeros. With `destinationId`, `delivered`, `dead`
   * and the latency are that destination's jobs (`UnknownDestination` when the source has none with that id).
   */
  readonly usage: (
    sourceId: string,
    days?: number,
    destinationId?: string
  ) => Effect.Effect<ReadonlyArray<UsageDay>, InvalidAdminRequest | UnknownSource | UnknownDestination | StoreError>
  /**
   * The message log (REFERENCE §12): every accepted message, filtered ones included, newest first, each with its state
   * at every destination it went to; filters combine, a filter's values are alternatives. A page may hold fewer than
   * `limit` messages with `next` set: pass `next` as `after` for the older ones. Refused, naming the field: `limit`
   * outside 1 to 1000, an unknown status, a time that is not a number, an `after` this listing did not give.
   */
  readonly listMessages: (
    query: MessageLogQuery
  ) => Effect.Effect<MessageLogPage, InvalidAdminRequest | StoreError>
  /**
   * The older search, kept for `GET /admin/sources/{id}/messages` (REFERENCE §12): a user's messages (of one source when `sourceId` is given too), or
   * a source's recent messages, newest first, each with its jobs and their attempts. `userId` or
   * `sourceId` is required; `limit` is 1 to 500. Messages that created no job (filtered, or no
   * enabled destination) are not listed: they are only counted.
   */
  readonly searchMessages: (
    search: MessageSearch
  ) => Effect.Effect<ReadonlyArray<MessageRecord>, InvalidAdminRequest | StoreError>
}

/** The message log, dead letters, the backlog and usage counters, as the admin API reads them. */
export class RelayMessages extends Context.Service<RelayMessages, RelayMessagesShape>()("hookrelay/RelayMessages") {}
