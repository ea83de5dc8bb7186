import type { AttemptRecord, Completion, EnqueueEntry, EnqueueOptions } from "../Model.js"

/** What the main thread sends the SQLite thread for each hot transaction (`SqliteTransactions`). */

export interface EnqueueRequest {
  readonly sourceId: string
  readonly entries: ReadonlyArray<EnqueueEntry>
  readonly now: number
  readonly options: EnqueueOptions | undefined
}

export interface CompleteRequest {
  readonly owner: string
  readonly completions: ReadonlyArray<Completion>
  readonly attempts: ReadonlyArray<AttemptRecord>
}

/** One chunk of a retention or dead-letter purge: the oldest `limit` finished jobs of `status` and their attempts. */
export interface PurgeRequest {
  readonly status: "delivered" | "dead"
  readonly olderThan: number
  readonly sourceId?: string | undefined
  readonly limit: number
}

export interface ClaimRequest {
  readonly owner: string
  readonly now: number
  readonly limit: number
  readonly leaseMs: number
  readonly excludeSourceIds: ReadonlyArray<string>
  /** Also take over jobs whose lease expired. */
  readonly expired: boolean
}

/**
 * A bound LIMIT, as an expression. SQLite (3.53, as better-sqlite3 12 ships it) reads the value of a bare `LIMIT ?`
 * when it plans the statement and marks the statement to be planned again whenever that parameter is bound anew, which
 * better-sqlite3 does on every call: each claim was compiled again. The plans are the same: the indexes give the
 * order, the limit only stops the scan.
 */
export const boundLimit = "CAST(? AS INTEGER)"
