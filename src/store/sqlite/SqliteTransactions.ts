import { dedupeWindowMs } from "../Model.js"
import type {
  AttemptRecord,
  CompleteResult,
  Completion,
  EnqueueEntry,
  EnqueueOptions,
  EnqueueResult
} from "../Model.js"
import {
  attemptRow,
  chunksOf,
  claimColumns,
  type ClaimTuple,
  claimTupleColumns,
  type CompletedRow,
  completionRows,
  firstOfEachMessageId,
  idChunk,
  type makeJobIds,
  makeTally,
  sortOutSeen,
  utcDay
} from "../Rows.js"
import type { RecentMessageIds } from "./RecentMessageIds.js"
import type { Database } from "./SqliteDriver.js"
import { type MergeProgress, type MergeRequest, prepareMerge } from "./SqliteMessageIdMerge.js"

// --- statement texts, shared with `SqlStore`'s SqlClient path (`?` placeholders) --------------------

/** Attempts as one JSON parameter of arrays (see `attemptRow`). Parameter: the JSON. */
export const sqliteInsertAttempts = `
  INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet)
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7,
    value ->> 8
  FROM json_each(?)`

/** What a completion returns per job: read as `CompletedRow` objects through the SqlClient. */
const completedColumns = "jobs.id AS id, jobs.source_id AS source_id, jobs.finished_at AS finished_at, " +
  "jobs.created_at AS created_at"

/** Plain deliveries, rows `[id, at, first, inc]`, lease-guarded. Parameters: the JSON, the owner. */
export const sqliteCompleteDelivered = (returning: string = completedColumns) => `
  UPDATE jobs SET
    status = 'delivered',
    finished_at = v.value ->> 1,
    attempts = jobs.attempts + (v.value ->> 3),
    first_attempt_at = coalesce(jobs.first_attempt_at, v.value ->> 2),
    body = X'',
    lease_owner = NULL,
    lease_expires_at = NULL
  FROM json_each(?) AS v
  WHERE jobs.id = v.value ->> 0 AND jobs.status = 'delivering' AND jobs.lease_owner = ?
  RETURNING ${returning}`

/** Any completion, rows as `CompletionRow` objects, lease-guarded. Parameters: the JSON, the owner. */
export const sqliteComplete = `
  UPDATE jobs SET
    status = v.status,
    finished_at = v.at,
    attempts = jobs.attempts + v.inc,
    next_due_at = coalesce(v.due, jobs.next_due_at),
    first_attempt_at = coalesce(jobs.first_attempt_at, v.first),
    endpoint_state = coalesce(v.state, jobs.endpoint_state),
    last_error = CASE WHEN v.status = 'delivered' THEN jobs.last_error ELSE v.err END,
    body = CASE WHEN v.status = 'delivered' THEN X'' ELSE jobs.body END,
    lease_owner = NULL,
    lease_expires_at = NULL
  FROM (
    SELECT value ->> 'id' AS id, value ->> 'status' AS status, value ->> 'at' AS at,
      value ->> 'due' AS due, value ->> 'first' AS first, value ->> 'state' AS state,
      value ->> 'err' AS err, value ->> 'inc' AS inc
    FROM json_each(?)
  ) AS v
  WHERE jobs.id = v.id AND jobs.status = 'delivering' AND jobs.lease_owner = ?
  RETURNING jobs.id AS id, jobs.source_id AS source_id, jobs.status AS status,
    jobs.finished_at AS finished_at, jobs.created_at AS created_at`

const usageSums = `
    api_calls = usage_daily.api_calls + excluded.api_calls,
    messages = usage_daily.messages + excluded.messages,
    filtered = usage_daily.filtered + excluded.filtered,
    delivered = usage_daily.delivered + excluded.delivered,
    dead = usage_daily.dead + excluded.dead,
    latency_ms = usage_daily.latency_ms + excluded.latency_ms,
    latency_jobs = usage_daily.latency_jobs + excluded.latency_jobs`

/** What a usage upsert adds to an existing (source, day) row. */
export const usageOnConflict = `ON CONFLICT (source_id, day) DO UPDATE SET ${usageSums}`

/** PostgreSQL's usage rows are sharded (`usageShards` in `Migrations.ts`): what an upsert adds to its shard's row. */
export const usageOnShardConflict = `ON CONFLICT (source_id, day, shard) DO UPDATE SET ${usageSums}`

/** The order usage rows are written in, so that transactions lock them in the same order. */
export const byUsageKey = (a: { source_id: string; day: number }, b: { source_id: string; day: number }) =>
  a.source_id < b.source_id ? -1 : a.source_id > b.source_id ? 1 : a.day - b.day

/**
 * A bound LIMIT, as an expression. SQLite (3.53, as better-sqlite3 12 ships it) reads the value of a bare `LIMIT ?`
 * when it plans the statement and marks the statement to be planned again whenever that parameter is bound anew, which
 * better-sqlite3 does on every call: each claim was compiled again (~5 % of the SQLite thread's time in the dispatcher
 * benchmark; a bare `SELECT … ORDER BY … LIMIT ?` took 7.7 µs a call against 3.4 with this form). The plans are the
 * same: the indexes give the order, the limit only stops the scan.
 */
const boundLimit = "CAST(? AS INTEGER)"

/** Sources left out of a claim, as one JSON array parameter (the text stays the same whatever their number). */
const notExcluded = (excluding: boolean) => excluding ? " AND source_id NOT IN (SELECT value FROM json_each(?))" : ""

// Each UPDATE is atomic on its own (SQLite runs one statement at a time). Parameters: `claimParameters`. The rows are
// chosen by rowid: the due index holds it, so the subquery reads no table row and the UPDATE needs no look-up of the
// text key (measured with callgrind: ~9 % fewer SQLite instructions per claimed row). `returning`: the SqlClient path
// reads `claimColumns` as objects, the SQLite thread `claimTupleColumns`.
export const sqliteClaimExpired = (excluding: boolean, returning: string = claimColumns) => `
  UPDATE jobs SET lease_owner = ?, lease_expires_at = ?
  WHERE rowid IN (
    SELECT rowid FROM jobs WHERE status = 'delivering' AND lease_expires_at <= ?${notExcluded(excluding)}
    ORDER BY lease_expires_at LIMIT ${boundLimit})
  RETURNING ${returning}`

export const sqliteClaimPending = (excluding: boolean, returning: string = claimColumns) => `
  UPDATE jobs SET status = 'delivering', lease_owner = ?, lease_expires_at = ?
  WHERE rowid IN (
    SELECT rowid FROM jobs WHERE status = 'pending' AND next_due_at <= ?${notExcluded(excluding)}
    ORDER BY next_due_at LIMIT ${boundLimit})
  RETURNING ${returning}`

export interface ClaimRequest {
  readonly owner: string
  readonly now: number
  readonly limit: number
  readonly leaseMs: number
  readonly excludeSourceIds: ReadonlyArray<string>
  /** Also take over jobs whose lease expired. */
  readonly expired: boolean
}

/** The parameters of `sqliteClaimExpired` / `sqliteClaimPending` taking at most `room` jobs. */
export const claimParameters = (request: ClaimRequest, room: number): Array<unknown> => {
  const until = request.now + request.leaseMs
  return request.excludeSourceIds.length > 0
    ? [request.owner, until, request.now, JSON.stringify(request.excludeSourceIds), room]
    : [request.owner, until, request.now, room]
}

// --- the transactions -------------------------------------------------------------------------------

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

/** The store's hot transactions, each one synchronous call on the connection. */
export interface Transactions {
  /** One request's dedupe, job rows and usage count. */
  readonly enqueue: (request: EnqueueRequest) => EnqueueResult
  /** Due jobs (expired leases first when asked), leased to the owner, as rows in no particular order. */
  readonly claim: (request: ClaimRequest) => Array<ClaimTuple>
  /** A batch of finished jobs, their attempts and usage, lease-guarded. */
  readonly complete: (request: CompleteRequest) => CompleteResult
  /** One purge chunk; answers how many jobs it deleted (fewer than `limit`: nothing older is left). */
  readonly purge: (request: PurgeRequest) => number
  /** One step of merging the message id log (see `MergeRequest`). */
  readonly merge: (request: MergeRequest) => MergeProgress
}

/** Prepares the hot transactions' statements on `db` (migrated); `newJobIds` names the jobs this connection inserts. */
export const prepareTransactions = (
  db: Database,
  newJobIds: ReturnType<typeof makeJobIds>,
  recent: RecentMessageIds
): Transactions => {
  // An id beyond the greatest one a b-tree holds goes to its last page, which the commits before wrote too: written
  // there at once, as time-ordered ids are (analytics-node's, analytics.js's), it costs less than a log row and its
  // merge. Any other id would land on a page of its own: it goes to the log (random ids). `seenEdge` (per source, in
  // `seen_messages`) and `jobsEdge` (in `message_jobs`) are upper bounds of those greatest ids, read once and moved up
  // with each id written at the edge; forgotten after a merge (`forgetEdges`), which may write beyond them. Nothing
  // depends on them for being right: the upsert at the edge still refuses an id the index holds, the log's ids are
  // looked up in memory and in the index, and a look-up reads both places.
  const seenEdge = new Map<string, string | null>()
  let jobsEdge: string | null | undefined
  const greatestSeen = db.prepare(`SELECT max(message_id) FROM seen_messages WHERE source_id = ?`).pluck(true)
  const greatestIndexed = db.prepare(`SELECT max(message_id) FROM message_jobs`).pluck(true)
  const seenEdgeOf = (sourceId: string): string | null => {
    let edge = seenEdge.get(sourceId)
    if (edge === undefined) seenEdge.set(sourceId, edge = (greatestSeen.get(sourceId) as string | null) ?? null)
    return edge
  }
  const forgetEdges = () => {
    seenEdge.clear()
    jobsEdge = undefined
  }
  // As `markSeen` on SQLite. `WHERE true` resolves SQLite's parsing ambiguity between a join's ON and the upsert.
  const seenAtEdge = db.prepare(`
    INSERT INTO seen_messages (source_id, message_id, seen_at)
    SELECT ?, value, ? FROM json_each(?) WHERE true
    ON CONFLICT (source_id, message_id) DO UPDATE SET seen_at = excluded.seen_at
    WHERE seen_messages.seen_at <= ?
    RETURNING message_id`).pluck(true)
  const seenIndex = db.prepare(`
    SELECT message_id, seen_at FROM seen_messages
    WHERE source_id = ? AND message_id IN (SELECT value FROM json_each(?))`).raw(true)
  const jobsAtEdge = db.prepare(`
    INSERT OR IGNORE INTO message_jobs (message_id, job_id, source_id)
    SELECT value ->> 0, value ->> 1, ? FROM json_each(?)`)
  const logRow = db.prepare(`
    INSERT INTO message_id_log (source_id, message_id, seen_at, job_id, dedupe) VALUES (?, ?, ?, ?, ?)`)
  const job = db.prepare(`
    INSERT INTO jobs (id, source_id, message_id, user_id, kind, body, status, created_at, next_due_at, message_type, event)
    VALUES (?, ?, ?, ?, 'message', ?, 'pending', ?, ?, ?, ?)`)
  const usage = db.prepare(`
    INSERT INTO usage_daily (source_id, day, api_calls, messages, filtered, delivered, dead, latency_ms, latency_jobs)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)${usageOnConflict}`)

  /**
   * Dedupe: ids beyond the source's edge are upserted into `seen_messages` at once (the upsert answers which are new);
   * the others are looked up in memory (`RecentMessageIds`) and in the index, and the new ones logged and remembered.
   * Answers the accepted ids, and which of them went to the log.
   */
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
      for (const messageId of seenAtEdge.all(sourceId, now, JSON.stringify(atEdge), cutoff)) accepted.add(messageId)
      seenEdge.set(sourceId, edge)
    }
    if (elsewhere.length > 0) {
      const indexed = new Map<string, number>()
      for (const [messageId, seenAt] of seenIndex.all(sourceId, JSON.stringify(elsewhere))) {
        indexed.set(messageId as string, Number(seenAt))
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

  const enqueueTransaction = db.transaction(({ entries, now, options, sourceId }: EnqueueRequest): EnqueueResult => {
    const { duplicateMessageIds, unique } = firstOfEachMessageId(entries)
    const { accepted, logged } = unique.size > 0
      ? dedupe(sourceId, Array.from(unique.keys()), now)
      : { accepted: new Set<string>(), logged: new Set<string>() }
    const { filtered, withBody } = sortOutSeen(unique, accepted, duplicateMessageIds)
    const jobIds = newJobIds(now, withBody.length)
    for (let i = 0; i < withBody.length; i++) {
      const entry = withBody[i]!
      job.run(
        jobIds[i]!,
        sourceId,
        entry.messageId,
        entry.userId ?? null,
        entry.body,
        now,
        now,
        entry.type ?? null,
        entry.event ?? null
      )
    }
    // The job of each message id where the log keeps it (not at the edge of `message_jobs`); in id order, as dedupe.
    const loggedJob = new Map<string, string>()
    const edgeJobs: Array<[messageId: string, jobId: string]> = []
    jobsEdge ??= (greatestIndexed.get() as string | null) ?? null
    const byMessageId = withBody.map((entry, i) => [entry.messageId, jobIds[i]!] as [string, string])
    for (const [messageId, jobId] of byMessageId.sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) {
      if (jobsEdge === null || messageId > jobsEdge) {
        edgeJobs.push([messageId, jobId])
        jobsEdge = messageId
      } else {
        loggedJob.set(messageId, jobId)
      }
    }
    if (edgeJobs.length > 0) jobsAtEdge.run(sourceId, JSON.stringify(edgeJobs))
    if (logged.size > 0 || loggedJob.size > 0) {
      for (const messageId of accepted) {
        const jobId = loggedJob.get(messageId) ?? null
        const counted = logged.has(messageId)
        if (counted || jobId !== null) logRow.run(sourceId, messageId, now, jobId, counted ? 1 : 0)
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

  const tuples = (text: string) => db.prepare(text).raw(true)
  const claimExpired = [
    tuples(sqliteClaimExpired(false, claimTupleColumns)),
    tuples(sqliteClaimExpired(true, claimTupleColumns))
  ] as const
  const claimPending = tuples(sqliteClaimPending(false, claimTupleColumns))

  // A claim that leaves sources out takes the other sources' due jobs one source at a time through
  // `jobs_pending_source` (migration 7): the sources with pending jobs one index seek each, then each included source's
  // earliest `room` due jobs, of which the `room` earliest of all are leased. The same jobs the due index gives in due
  // order, without walking the left-out sources' rows (see the migration).
  const sourceAfter = db.prepare(`
    SELECT source_id FROM jobs WHERE status = 'pending' AND source_id > ? ORDER BY source_id LIMIT 1`).pluck(true)
  const dueOfSource = db.prepare(`
    SELECT rowid, next_due_at FROM jobs WHERE status = 'pending' AND source_id = ? AND next_due_at <= ?
    ORDER BY next_due_at LIMIT ${boundLimit}`).raw(true)
  const leaseRows = tuples(`
    UPDATE jobs SET status = 'delivering', lease_owner = ?, lease_expires_at = ?
    WHERE rowid IN (SELECT value FROM json_each(?)) AND status = 'pending'
    RETURNING ${claimTupleColumns}`)
  const claimPendingExcluding = (request: ClaimRequest, room: number): Array<ClaimTuple> => {
    const excluded = new Set(request.excludeSourceIds)
    const due: Array<readonly [rowid: number, nextDueAt: number]> = []
    for (
      let source = sourceAfter.get("") as string | undefined;
      source !== undefined;
      source = sourceAfter.get(source) as string | undefined
    ) {
      if (excluded.has(source)) continue
      for (const row of dueOfSource.all(source, request.now, room)) due.push(row as [number, number])
    }
    if (due.length === 0) return []
    due.sort((a, b) => a[1] - b[1] || a[0] - b[0])
    const rowids = due.length > room ? due.slice(0, room).map((row) => row[0]) : due.map((row) => row[0])
    return leaseRows.all(request.owner, request.now + request.leaseMs, JSON.stringify(rowids)) as Array<ClaimTuple>
  }

  // Rows in no particular order: the main thread sorts the decoded jobs (`decodeClaim`).
  const claim = db.transaction((request: ClaimRequest): Array<ClaimTuple> => {
    const { limit } = request
    if (limit <= 0) return []
    const excluding = request.excludeSourceIds.length > 0 ? 1 : 0
    // Expired leases first: a dead process's jobs are the oldest work.
    const expired = request.expired
      ? claimExpired[excluding].all(...claimParameters(request, limit)) as Array<ClaimTuple>
      : []
    const room = limit - expired.length
    const pending = room <= 0
      ? []
      : excluding === 1
      ? claimPendingExcluding(request, room)
      : claimPending.all(...claimParameters(request, room)) as Array<ClaimTuple>
    return expired.length === 0 ? pending : expired.concat(pending)
  })

  // One prepared INSERT per attempt, not `sqliteInsertAttempts`' JSON: on this thread there is no round trip to save,
  // and binding nine values cost about half of building and walking the JSON (measured: ~2 against ~4.3 µs a row).
  const insertAttempt = db.prepare(`
    INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  // Plain deliveries one row at a time, as the attempts: on this thread the JSON of `sqliteCompleteDelivered` (written,
  // walked by json_each, joined, and its RETURNING rows written as JSON texts and parsed again) cost more than binding
  // five values and reading two. Measured on the thread in the dispatcher benchmark (`--fake sqlite`, alternate builds,
  // 9 runs each): its time in completions per 20 000 jobs, median 304 ms before, 250 after.
  // No RETURNING: SQLite runs a statement with one as if it had a trigger, which gives up the one-pass update of a row
  // found by its key (the row's key goes to a temporary table first) and writes each returned row to another. Alone,
  // on a file outbox of 20 000 leased jobs, 400 completions a transaction: ~12.4 µs a job with RETURNING, ~4.2 with the
  // update and then a read of the two columns by key. On the thread, in the dispatcher benchmark (`--fake sqlite`,
  // alternate builds, 9 runs each) far less: completions 130–155 → 125–145 ms per 20 000 jobs.
  const delivered = db.prepare(`
    UPDATE jobs SET
      status = 'delivered',
      finished_at = ?,
      attempts = attempts + ?,
      first_attempt_at = coalesce(first_attempt_at, ?),
      body = X'',
      lease_owner = NULL,
      lease_expires_at = NULL
    WHERE id = ? AND status = 'delivering' AND lease_owner = ?`)
  const deliveredJob = db.prepare(`SELECT source_id, created_at FROM jobs WHERE id = ?`).raw(true)
  const general = db.prepare(sqliteComplete)
  const increment = db.prepare(`UPDATE jobs SET attempts = attempts + ? WHERE id = ?`)
  const complete = db.transaction(({ attempts, completions, owner }: CompleteRequest): CompleteResult => {
    const { increments, other, plain, rows } = completionRows(completions, attempts)
    for (const record of attempts) insertAttempt.run(...attemptRow(record))
    const tally = makeTally()
    for (const [id, at, first, inc, knownSourceId, knownCreatedAt] of plain) {
      if (delivered.run(at, inc, first, id, owner).changes === 0) continue
      // The dispatcher sends what its claim read; reading it back cost ~1.3 µs a job here, a quarter of the update.
      const [sourceId, createdAt] = knownSourceId !== null && knownCreatedAt !== null
        ? [knownSourceId, knownCreatedAt]
        : deliveredJob.get(id) as [string, number]
      tally.count({ id, source_id: sourceId, finished_at: at, created_at: createdAt }, "delivered")
    }
    for (const chunk of chunksOf(other, idChunk)) {
      for (const row of general.all(JSON.stringify(chunk), owner) as Array<CompletedRow & { status: string }>) {
        tally.count(row, row.status)
      }
    }
    for (const row of tally.usage.values()) {
      usage.run(
        row.source_id,
        row.day,
        row.api_calls,
        row.messages,
        row.filtered,
        row.delivered,
        row.dead,
        row.latency_ms,
        row.latency_jobs
      )
    }
    // Attempts of jobs not completed here (or whose completion was refused) still count.
    for (const jobId of tally.applied) increments.delete(jobId)
    for (const [jobId, n] of increments) increment.run(n, jobId)
    return tally.result(rows)
  })

  // A chunk as one call: through `SqlClient` it held the connection's lock across five round trips (BEGIN, the ids,
  // two DELETEs, COMMIT), each waiting for the event loop, while ingest commits queued behind it.
  const oldest = "SELECT id FROM jobs WHERE status = ? AND finished_at < ?"
  const purgeIds = db.prepare(`${oldest} ORDER BY finished_at LIMIT ${boundLimit}`).raw(true)
  const purgeIdsOfSource = db.prepare(`${oldest} AND source_id = ? ORDER BY finished_at LIMIT ${boundLimit}`).raw(true)
  const deleteAttempts = db.prepare(`DELETE FROM attempts WHERE job_id IN (SELECT value FROM json_each(?))`)
  const deleteJobs = db.prepare(`DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))`)
  const purge = db.transaction(({ limit, olderThan, sourceId, status }: PurgeRequest): number => {
    const rows = sourceId === undefined
      ? purgeIds.all(status, olderThan, limit)
      : purgeIdsOfSource.all(status, olderThan, sourceId, limit)
    if (rows.length === 0) return 0
    const ids = JSON.stringify(rows.map((row: [string]) => row[0]))
    deleteAttempts.run(ids)
    deleteJobs.run(ids)
    return rows.length
  })

  const merge = prepareMerge(db, recent, forgetEdges)

  return { enqueue, claim, complete, purge, merge }
}
