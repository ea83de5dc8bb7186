import type { RecentMessageIds } from "./RecentMessageIds.js"
import type { Database } from "./SqliteDriver.js"

/**
 * One step of merging `message_id_log` into `seen_messages` and `message_jobs` (migration 9). The first step of a merge
 * takes the log as it is then, sorted by key; each step merges the next `limit` rows of it, in one transaction.
 */
export interface MergeRequest {
  readonly limit: number
  /** Merge only when the log holds at least this many rows, or its oldest row is older than `olderThan`. */
  readonly minRows: number
  readonly olderThan: number
  /** At most this many of the log's oldest rows per merge (the sorted copy is held in memory). */
  readonly maxRows: number
}

export interface MergeProgress {
  /** Rows of the log merged by this step. */
  readonly merged: number
  /** Nothing left of the merge this step belongs to (or nothing to merge). */
  readonly done: boolean
  /** When done: the rows the log still holds (too few and too young to merge, or beyond `maxRows`). */
  readonly left: number
}

/**
 * The merge of the message id log on the SQLite thread's connection (migration 9). `afterMerge` runs once a merge
 * wrote its rows (the enqueue's edges may be below them now).
 */
export const prepareMerge = (
  db: Database,
  recent: RecentMessageIds,
  afterMerge: () => void
): (request: MergeRequest) => MergeProgress => {
  // The merge works on a sorted copy of the log in a temporary table (memory, not the WAL): its rowids follow the keys,
  // so a step's rows are one run of keys, the pages they land on are next to each other, and each page of the indexes
  // is written about once per merge instead of once per row. Each step is idempotent (an upsert keeping the latest
  // time, an insert that ignores what is there): a merge cut short by a crash is done again from the log.
  db.pragma("temp_store = MEMORY")
  db.prepare(`CREATE TEMP TABLE IF NOT EXISTS message_merge (
    source_id TEXT NOT NULL, message_id TEXT NOT NULL, seen_at INTEGER NOT NULL, job_id TEXT, dedupe INTEGER NOT NULL)`)
    .run()
  const logBounds = db.prepare(`
    SELECT max(rowid), max(rowid) - min(rowid) + 1,
      (SELECT seen_at FROM message_id_log ORDER BY rowid LIMIT 1) FROM message_id_log`).raw(true)
  const takeLog = db.prepare(`
    INSERT INTO temp.message_merge (source_id, message_id, seen_at, job_id, dedupe)
    SELECT source_id, message_id, seen_at, job_id, dedupe FROM main.message_id_log WHERE rowid <= ?
    ORDER BY source_id, message_id, seen_at`)
  // `WHERE true` resolves SQLite's parsing ambiguity between a join's ON and the upsert.
  const mergeSeen = db.prepare(`
    INSERT INTO main.seen_messages (source_id, message_id, seen_at)
    SELECT source_id, message_id, seen_at FROM temp.message_merge WHERE rowid BETWEEN ? AND ? AND dedupe = 1 AND true
    ON CONFLICT (source_id, message_id) DO UPDATE SET seen_at = excluded.seen_at
    WHERE excluded.seen_at > seen_messages.seen_at`)
  // A job deleted before its merge (a deletion request, a purge) gets no entry: `jobs_unlogged` had none to delete.
  const mergeJobs = db.prepare(`
    INSERT OR IGNORE INTO main.message_jobs (message_id, job_id, source_id)
    SELECT m.message_id, m.job_id, m.source_id FROM temp.message_merge AS m
    WHERE m.rowid BETWEEN ? AND ? AND m.job_id IS NOT NULL AND EXISTS (SELECT 1 FROM main.jobs WHERE id = m.job_id)`)
  const dropLog = db.prepare(`DELETE FROM main.message_id_log WHERE rowid <= ?`)
  const mergedSeen = db.prepare(`SELECT source_id, message_id, seen_at FROM temp.message_merge WHERE dedupe = 1`).raw(
    true
  )
  const clearMerge = db.prepare(`DELETE FROM temp.message_merge`)
  let merging: { lastLogRow: number; rows: number; next: number; after: number } | undefined
  const mergeStep = db.transaction((from: number, to: number) => {
    mergeSeen.run(from, to)
    mergeJobs.run(from, to)
  })
  const merge = (request: MergeRequest): MergeProgress => {
    try {
      if (merging === undefined) {
        const [lastLogRow, rows, oldest] = logBounds.get() as [number | null, number | null, number | null]
        if (lastLogRow === null || rows === null) return { merged: 0, done: true, left: 0 }
        if (rows < request.minRows && (oldest === null || oldest >= request.olderThan)) {
          return { merged: 0, done: true, left: rows }
        }
        clearMerge.run()
        const until = lastLogRow - Math.max(0, rows - Math.max(1, request.maxRows))
        const taken = takeLog.run(until).changes
        merging = { lastLogRow: until, rows: taken, next: 1, after: lastLogRow - until }
      }
      const from = merging.next
      const to = Math.min(merging.rows, from + Math.max(1, request.limit) - 1)
      if (from <= to) mergeStep(from, to)
      merging.next = to + 1
      if (merging.next <= merging.rows) return { merged: to - from + 1, done: false, left: 0 }
      dropLog.run(merging.lastLogRow)
      for (const [sourceId, messageId, seenAt] of mergedSeen.iterate() as Iterable<[string, string, number]>) {
        recent.forget(sourceId, messageId, Number(seenAt))
      }
      clearMerge.run()
      afterMerge()
      const left = merging.after
      merging = undefined
      return { merged: Math.max(0, to - from + 1), done: true, left }
    } catch (error) {
      // Started again from the log by the next call.
      merging = undefined
      throw error
    }
  }

  return merge
}
