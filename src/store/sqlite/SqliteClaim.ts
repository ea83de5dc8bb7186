import { type ClaimTuple, claimTupleColumns } from "../Rows.js"
import type { Database } from "./SqliteDriver.js"
import { boundLimit, type ClaimRequest } from "./SqliteRequests.js"

/** Sources left out of a claim, as one JSON array parameter (the text stays the same whatever their number). */
const notExcluded = (excluding: boolean) => excluding ? " AND source_id NOT IN (SELECT value FROM json_each(?))" : ""

// Each UPDATE is atomic on its own (SQLite runs one statement at a time). Parameters: `claimParameters`. The rows are
// chosen by rowid: the due index holds it, so the subquery reads no table row and the UPDATE needs no look-up of the
// text key.
const claimExpiredText = (excluding: boolean) => `
  UPDATE jobs SET lease_owner = ?, lease_expires_at = ?
  WHERE rowid IN (
    SELECT rowid FROM jobs WHERE status = 'delivering' AND lease_expires_at <= ?${notExcluded(excluding)}
    ORDER BY lease_expires_at LIMIT ${boundLimit})
  RETURNING ${claimTupleColumns}`

// A claim names `fan_out` (set to itself): a row leaving `pending` fires the fan-out trigger (migration 22).
const leasePending = "UPDATE jobs SET status = 'delivering', lease_owner = ?, lease_expires_at = ?, fan_out = fan_out"

// Leaving no source out (`claimPendingExcluding` below does).
const claimPendingText = `
  ${leasePending}
  WHERE rowid IN (
    SELECT rowid FROM jobs WHERE status = 'pending' AND next_due_at <= ?
    ORDER BY next_due_at LIMIT ${boundLimit})
  RETURNING ${claimTupleColumns}`

/** The parameters of `claimExpiredText` / `claimPendingText` taking at most `room` jobs. */
const claimParameters = (request: ClaimRequest, room: number): Array<unknown> => {
  const until = request.now + request.leaseMs
  return request.excludeSourceIds.length > 0
    ? [request.owner, until, request.now, JSON.stringify(request.excludeSourceIds), room]
    : [request.owner, until, request.now, room]
}

/** Prepares the claim on `db`: due jobs (expired leases first when asked), leased to the owner. */
export const prepareClaim = (db: Database) => {
  const tuples = (text: string) => db.prepare(text).raw(true)
  const claimExpired = [
    tuples(claimExpiredText(false)),
    tuples(claimExpiredText(true))
  ] as const
  const claimPending = tuples(claimPendingText)

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
    ${leasePending}
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

  // Row changes so far, those of triggers included: more than the rows claimed means a claimed row made its
  // message's other jobs (`jobs_fan_out`, migration 21).
  const totalChanges = db.prepare(`SELECT total_changes()`).pluck(true)
  const claimPendingOnce = (request: ClaimRequest, room: number, excluding: 0 | 1): Array<ClaimTuple> =>
    excluding === 1
      ? claimPendingExcluding(request, room)
      : claimPending.all(...claimParameters(request, room)) as Array<ClaimTuple>

  /** Due pending jobs, and the jobs the claimed rows made, due at once, while room is left. */
  const claimPendingWithMade = (request: ClaimRequest, room: number, excluding: 0 | 1): Array<ClaimTuple> => {
    const before = totalChanges.get() as number
    const claimed = claimPendingOnce(request, room, excluding)
    const made = (totalChanges.get() as number) - before > claimed.length
    return made && claimed.length < room
      ? claimed.concat(claimPendingOnce(request, room - claimed.length, excluding))
      : claimed
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
    const pending = room <= 0 ? [] : claimPendingWithMade(request, room, excluding)
    return expired.length === 0 ? pending : expired.concat(pending)
  })
  return claim
}
