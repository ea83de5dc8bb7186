import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import type { ClaimOptions } from "../Model.js"
import { claimColumns, type ClaimRow, rowsInDueOrder, toClaimed } from "../Rows.js"
import { fail, type StoreKit, untraced } from "../StoreKit.js"

/** What one claim statement leases to whom until when, and which sources it leaves out. */
interface Lease {
  readonly owner: string
  readonly now: number
  readonly until: number
  readonly excludeSourceIds: ReadonlyArray<string>
  readonly columns: Statement.Fragment
}

// Leaving sources out, PostgreSQL takes the other sources' due jobs one source at a time through
// `jobs_pending_source` (migration 7): the sources with pending jobs by a skip scan (one index probe each), each
// included one's earliest `room` due jobs, then the `room` earliest of all. Through the due index the claim walked
// every due row of the left-out sources (`bench/support/backlogStall.ts --pg`).
const claimPendingExcluding =
  (sql: SqlClient.SqlClient, { columns, excludeSourceIds, now, owner, until }: Lease) => (room: number) =>
    sql<ClaimRow & { readonly carried?: boolean }>`
    UPDATE jobs SET status = 'delivering', lease_owner = ${owner}, lease_expires_at = ${until}
    WHERE id IN (
      WITH RECURSIVE pending_sources(source_id) AS (
        (SELECT source_id FROM jobs WHERE status = 'pending' ORDER BY source_id LIMIT 1)
        UNION ALL
        SELECT (
          SELECT j.source_id FROM jobs AS j
          WHERE j.status = 'pending' AND j.source_id > p.source_id ORDER BY j.source_id LIMIT 1)
        FROM pending_sources AS p WHERE p.source_id IS NOT NULL
      ),
      included AS (
        SELECT source_id FROM pending_sources
        WHERE source_id IS NOT NULL AND source_id NOT IN ${sql.in(excludeSourceIds)}
      )
      SELECT due.id FROM included CROSS JOIN LATERAL (
        SELECT id, next_due_at FROM jobs
        WHERE status = 'pending' AND source_id = included.source_id AND next_due_at <= ${now}
        ORDER BY next_due_at, id LIMIT ${room} FOR UPDATE SKIP LOCKED
      ) AS due
      ORDER BY due.next_due_at, due.id LIMIT ${room})
    RETURNING ${columns}`

/**
 * PostgreSQL's claim. Each UPDATE is atomic on its own: PostgreSQL locks the chosen rows (SKIP LOCKED: concurrent
 * claimers take different rows, nobody waits). Sources whose mailbox is full in this dispatcher wait out the claim,
 * so their backlog cannot crowd the others out.
 */
export const makeClaim = ({ sql }: StoreKit) => {
  // `carried`: the row carried its message's other jobs, which the claim made (`jobs_fan_out`, migration 21).
  const columns = sql.literal(`${claimColumns}, fan_out IS NOT NULL AS carried`)
  return Effect.fn("Store.claimDue")(
    function*(owner: string, now: number, limit: number, leaseMs: number, options?: ClaimOptions) {
      const excludeSourceIds = options?.excludeSourceIds ?? []
      const excluding = excludeSourceIds.length > 0
      const until = now + leaseMs
      const notExcluded = excluding ? sql` AND source_id NOT IN ${sql.in(excludeSourceIds)}` : sql.literal("")
      const claimExpired = (room: number) =>
        sql<ClaimRow & { readonly carried?: boolean }>`
          UPDATE jobs SET lease_owner = ${owner}, lease_expires_at = ${until}
          WHERE id IN (
            SELECT id FROM jobs WHERE status = 'delivering' AND lease_expires_at <= ${now}${notExcluded}
            ORDER BY lease_expires_at LIMIT ${room} FOR UPDATE SKIP LOCKED)
          RETURNING ${columns}`
      const claimPending = excluding
        ? claimPendingExcluding(sql, { owner, now, until, excludeSourceIds, columns })
        : (room: number) =>
          sql<ClaimRow & { readonly carried?: boolean }>`
            UPDATE jobs SET status = 'delivering', lease_owner = ${owner}, lease_expires_at = ${until}
            WHERE id IN (
              SELECT id FROM jobs WHERE status = 'pending' AND next_due_at <= ${now}
              ORDER BY next_due_at LIMIT ${room} FOR UPDATE SKIP LOCKED)
            RETURNING ${columns}`
      // Expired leases first: a dead process's jobs are the oldest work.
      const expired = limit <= 0 || options?.expired === false ? [] : yield* claimExpired(limit)
      const room = limit - expired.length
      const claimed = room <= 0 ? [] : yield* claimPending(room)
      // The jobs the claimed rows made are due at once: taken now while room is left.
      const pending = claimed.length < room && claimed.some((row) => row.carried === true)
        ? claimed.concat(yield* claimPending(room - claimed.length))
        : claimed
      return rowsInDueOrder(expired.concat(pending)).map(toClaimed)
    },
    untraced,
    fail("claimDue")
  )
}
