import { carriedDestinations, jobIdsOf } from "../CarriedJobs.js"
import { dedupeWindowMs } from "../Model.js"
import type { EnqueueResult } from "../Model.js"
import { destinationsOf, firstOfEachMessageId, type makeJobIds, sortOutSeen, utcDay } from "../Rows.js"
import { usageOnConflict } from "../UsageRows.js"
import type { RecentMessageIds } from "./RecentMessageIds.js"
import type { Database } from "./SqliteDriver.js"
import type { EnqueueRequest } from "./SqliteRequests.js"

// An id beyond the greatest one a b-tree holds goes to its last page, which the commits before wrote too: written
// there at once, as time-ordered ids are (analytics-node's, analytics.js's), it costs less than a log row and its
// merge. Any other id would land on a page of its own: it goes to the log (random ids). `seenEdge` (per source, in
// `seen_messages`) and `jobsEdge` (in `message_jobs`) are upper bounds of those greatest ids, read once and moved up
// with each id written at the edge; forgotten after a merge (`forgetEdges`), which may write beyond them. Nothing
// depends on them for being right: the upsert at the edge still refuses an id the index holds, the log's ids are
// looked up in memory and in the index, and a look-up reads both places.

/**
 * Dedupe: ids beyond the source's edge are upserted into `seen_messages` at once (the upsert answers which are new);
 * the others are looked up in memory (`RecentMessageIds`) and in the index, and the new ones logged and remembered.
 */
const prepareDedupe = (db: Database, recent: RecentMessageIds) => {
  const seenEdge = new Map<string, string | null>()
  const greatestSeen = db.prepare(`SELECT max(message_id) FROM seen_messages WHERE source_id = ?`).pluck(true)
  const seenEdgeOf = (sourceId: string): string | null => {
    let edge = seenEdge.get(sourceId)
    if (edge === undefined) seenEdge.set(sourceId, edge = (greatestSeen.get(sourceId) as string | null) ?? null)
    return edge
  }
  // `WHERE true` resolves SQLite's parsing ambiguity between a join's ON and the upsert.
  const seenAtEdge = db.prepare(`
    INSERT INTO seen_messages (source_id, message_id, seen_at)
    SELECT ?, value, ? FROM json_each(?) WHERE true
    ON CONFLICT (source_id, message_id) DO UPDATE SET seen_at = excluded.seen_at
    WHERE seen_messages.seen_at <= ?
    RETURNING message_id`).pluck(true)
  const seenIndex = db.prepare(`
    SELECT message_id, seen_at FROM seen_messages
    WHERE source_id = ? AND message_id IN (SELECT value FROM json_each(?))`).raw(true)
  /** Answers the accepted ids, and which of them went to the log. */
  const dedupe = (sourceId: string, messageIds: Array<string>, now: number) => {
    const cutoff = now - dedupeWindowMs
    const accepted = new Set<string>()
    const logged = new Set<string>()
    let edge = seenEdgeOf(sourceId)
    const atEdge: Array<string> = []
    const elsewhere: Array<string> = []
    for (const messageId of messageIds.sort()) {
      if ((edge === null || messageId > edge) && recent.lastSeen(sourceId, messageId) === undefined) {
        atEdge.push(messageId)
        edge = messageId
      } else {
        elsewhere.push(messageId)
      }
    }
    if (atEdge.length > 0) {
      for (const messageId of seenAtEdge.all(sourceId, now, JSON.stringify(atEdge), cutoff) as Array<string>) {
        accepted.add(messageId)
      }
      seenEdge.set(sourceId, edge)
    }
    if (elsewhere.length > 0) {
      const indexed = new Map<string, number>()
      for (const [messageId, seenAt] of seenIndex.all(sourceId, JSON.stringify(elsewhere)) as Array<[string, number]>) {
        indexed.set(messageId, Number(seenAt))
      }
      for (const messageId of elsewhere) {
        const last = recent.lastSeen(sourceId, messageId) ?? indexed.get(messageId)
        if (last !== undefined && last > cutoff) continue
        accepted.add(messageId)
        logged.add(messageId)
        recent.stage(sourceId, messageId, now)
      }
    }
    return { accepted, logged }
  }
  return { dedupe, forget: () => seenEdge.clear() }
}

/** Prepares ingest's transaction on `db`: dedupe, job rows, their index by message id (or the log), the usage count. */
export const prepareEnqueue = (db: Database, newJobIds: ReturnType<typeof makeJobIds>, recent: RecentMessageIds) => {
  const { dedupe, forget } = prepareDedupe(db, recent)
  let jobsEdge: string | null | undefined
  const greatestIndexed = db.prepare(`SELECT max(message_id) FROM message_jobs`).pluck(true)
  const jobsAtEdge = db.prepare(`
    INSERT OR IGNORE INTO message_jobs (message_id, job_id, source_id)
    SELECT value ->> 0, value ->> 1, ? FROM json_each(?)`)
  const logRow = db.prepare(`
    INSERT INTO message_id_log (source_id, message_id, seen_at, job_id, dedupe) VALUES (?, ?, ?, ?, ?)`)
  const job = db.prepare(`
    INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, status, created_at,
      next_due_at, message_type, event, trace_parent, log_seq, fan_out, fan_out_count)
    VALUES (?, ?, ?, ?, ?, 'message', ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)`)
  // The operator's message log (migration 20), keyed by (source_id, seq): each row lands at its source's end. The
  // last seq given is read and written back in each transaction, which holds the write lock by then (dedupe wrote).
  const logMessage = db.prepare(`
    INSERT INTO message_log (source_id, seq, message_id, received_at, type, event, user_id, anonymous_id, job_count)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const lastSeq = db.prepare(`SELECT last FROM message_log_seq WHERE id = 1`).pluck(true)
  const saveLastSeq = db.prepare(`UPDATE message_log_seq SET last = ? WHERE id = 1`)
  const usage = db.prepare(`
    INSERT INTO usage_daily (source_id, day, api_calls, messages, filtered, delivered, dead, latency_ms, latency_jobs)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)${usageOnConflict}`)
  const enqueueTransaction = db.transaction(({ entries, now, options, sourceId }: EnqueueRequest): EnqueueResult => {
    const { duplicateMessageIds, unique } = firstOfEachMessageId(entries)
    const { accepted, logged } = unique.size > 0
      ? dedupe(sourceId, Array.from(unique.keys()), now)
      : { accepted: new Set<string>(), logged: new Set<string>() }
    const { filtered, withBody } = sortOutSeen(unique, accepted, duplicateMessageIds)
    const rowIds = newJobIds(now, withBody.length)
    const traceparent = options?.traceparent ?? null
    // The log row of each accepted message first: its jobs keep its seq.
    const logSeqs = new Map<string, number>()
    let seq = accepted.size > 0 ? Number(lastSeq.get() ?? 0) : 0
    for (const entry of unique.values()) {
      if (!accepted.has(entry.messageId)) continue
      seq += 1
      logMessage.run(
        sourceId,
        seq,
        entry.messageId,
        now,
        entry.type ?? null,
        entry.event ?? null,
        entry.userId ?? null,
        entry.anonymousId ?? null,
        entry.body === undefined ? 0 : destinationsOf(entry).length
      )
      logSeqs.set(entry.messageId, seq)
    }
    if (logSeqs.size > 0) saveLastSeq.run(seq)
    // One row per message, its first destination's, carrying the others' jobs, made when the row is claimed
    // (migration 21).
    const byMessageId: Array<[messageId: string, jobId: string]> = []
    const jobIds: Array<string> = []
    withBody.forEach((entry, i) => {
      const destinations = destinationsOf(entry)
      const jobId = rowIds[i]!
      job.run(
        jobId,
        sourceId,
        destinations[0],
        entry.messageId,
        entry.userId ?? null,
        entry.body,
        now,
        now,
        entry.type ?? null,
        entry.event ?? null,
        traceparent,
        logSeqs.get(entry.messageId)!,
        carriedDestinations(destinations),
        destinations.length - 1
      )
      byMessageId.push([entry.messageId, jobId])
      jobIds.push(...jobIdsOf(jobId, destinations.length))
    })
    // The job of each message id where the log keeps it (not at the edge of `message_jobs`); in id order, as dedupe.
    const loggedJobs = new Map<string, string>()
    const edgeJobs: Array<[messageId: string, jobId: string]> = []
    jobsEdge ??= (greatestIndexed.get() as string | null) ?? null
    for (const [messageId, jobId] of byMessageId.sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) {
      if (jobsEdge === null || messageId > jobsEdge) {
        edgeJobs.push([messageId, jobId])
        jobsEdge = messageId
      } else {
        loggedJobs.set(messageId, jobId)
      }
    }
    if (edgeJobs.length > 0) jobsAtEdge.run(sourceId, JSON.stringify(edgeJobs))
    if (logged.size > 0 || loggedJobs.size > 0) {
      for (const messageId of accepted) {
        const jobId = loggedJobs.get(messageId)
        const counted = logged.has(messageId)
        if (counted || jobId !== undefined) logRow.run(sourceId, messageId, now, jobId ?? null, counted ? 1 : 0)
      }
    }
    usage.run(sourceId, utcDay(now), options?.countApiCall === false ? 0 : 1, accepted.size, filtered, 0, 0, 0, 0)
    return {
      accepted: accepted.size,
      duplicates: duplicateMessageIds.length,
      jobsCreated: jobIds.length,
      jobIds,
      duplicateMessageIds
    }
  })
  // The ids an enqueue staged become committed with its transaction: at once, or, inside a group commit (a savepoint),
  // when the thread commits the group (`SqliteThreadProgram`). A failed enqueue takes its ids back.
  const enqueue = (request: EnqueueRequest): EnqueueResult => {
    const mark = recent.mark()
    try {
      const result = enqueueTransaction(request)
      if (!db.inTransaction) recent.commit()
      return result
    } catch (error) {
      recent.rollbackTo(mark)
      throw error
    }
  }
  /** After a merge, which may write beyond them. */
  const forgetEdges = () => {
    forget()
    jobsEdge = undefined
  }
  return { enqueue, forgetEdges }
}
