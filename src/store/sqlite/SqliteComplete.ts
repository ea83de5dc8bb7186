import type { CompleteResult } from "../Model.js"
import { attemptRow, chunksOf, completionRows, idChunk } from "../Rows.js"
import { type CompletedRow, makeTally, usageOnConflict } from "../UsageRows.js"
import type { Database } from "./SqliteDriver.js"
import { boundLimit, type CompleteRequest, type PurgeRequest } from "./SqliteRequests.js"

/** Any completion, rows as `CompletionRow` objects, lease-guarded. Parameters: the JSON, the owner. */
const sqliteComplete = `
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
  RETURNING jobs.id AS id, jobs.source_id AS source_id, jobs.destination_id AS destination_id, jobs.status AS status,
    jobs.finished_at AS finished_at, jobs.created_at AS created_at`

/** Prepares the completion of a batch on `db`: its attempts, the lease-guarded updates, the usage counts. */
export const prepareComplete = (db: Database) => {
  const usage = db.prepare(`
    INSERT INTO usage_daily (source_id, destination_id, day, api_calls, messages, filtered, delivered, dead,
      latency_ms, latency_jobs)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)${usageOnConflict}`)
  // One prepared INSERT per attempt, not one JSON parameter as through `SqlClient` (`Attempts`): on this thread there
  // is no round trip to save, and binding nine values costs less than building and walking the JSON.
  const insertAttempt = db.prepare(`
    INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  // Plain deliveries one row at a time, as the attempts: on this thread one UPDATE joined to a JSON parameter (written,
  // walked by json_each, joined, and its RETURNING rows written as JSON texts and parsed again) cost more than binding
  // five values and reading two (`bench/dispatcher.ts --fake sqlite`).
  // No RETURNING: SQLite runs a statement with one as if it had a trigger, which gives up the one-pass update of a row
  // found by its key (the row's key goes to a temporary table first) and writes each returned row to another: the
  // update and then a read of the two columns by key costs less.
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
  const deliveredJob = db.prepare(`SELECT source_id, created_at, destination_id FROM jobs WHERE id = ?`).raw(true)
  const general = db.prepare(sqliteComplete)
  const increment = db.prepare(`UPDATE jobs SET attempts = attempts + ? WHERE id = ?`)
  const complete = db.transaction(({ attempts, completions, owner }: CompleteRequest): CompleteResult => {
    const { increments, other, plain, rows } = completionRows(completions, attempts)
    for (const record of attempts) insertAttempt.run(...attemptRow(record))
    const tally = makeTally()
    for (const [id, at, first, inc, knownSourceId, knownCreatedAt, knownDestinationId] of plain) {
      if (delivered.run(at, inc, first, id, owner).changes === 0) continue
      // The dispatcher sends what its claim read: no need to read it back.
      const [sourceId, createdAt, destinationId] = knownSourceId !== null && knownCreatedAt !== null &&
          knownDestinationId !== null
        ? [knownSourceId, knownCreatedAt, knownDestinationId]
        : deliveredJob.get(id) as [string, number, string]
      tally.count(
        { id, source_id: sourceId, destination_id: destinationId, finished_at: at, created_at: createdAt },
        "delivered"
      )
    }
    for (const chunk of chunksOf(other, idChunk)) {
      for (const row of general.all(JSON.stringify(chunk), owner) as Array<CompletedRow & { status: string }>) {
        tally.count(row, row.status)
      }
    }
    for (const row of tally.usage.values()) {
      usage.run(
        row.source_id,
        row.destination_id,
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
  return complete
}

/** Prepares one chunk of a purge on `db`: the oldest finished jobs of a status, and their attempts. */
export const preparePurge = (db: Database) => {
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
    const ids = JSON.stringify((rows as Array<[string]>).map((row) => row[0]))
    deleteAttempts.run(ids)
    deleteJobs.run(ids)
    return rows.length
  })
  return purge
}
