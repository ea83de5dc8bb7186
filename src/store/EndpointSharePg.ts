import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { randomUUID } from "node:crypto"
import type { EndpointKey } from "../domain/EndpointKey.js"
import { coolOffFirst, coolOffMax, type EndpointShareShape, type SharedCircuit } from "./EndpointShare.js"
import { fail } from "./StoreKit.js"

interface CircuitRow {
  readonly source_id: string
  readonly destination_id: string
  readonly url: string
  readonly state: string
  readonly failures: number
  readonly next_probe_at: number | string
}

const circuitOf = (row: CircuitRow): SharedCircuit => ({
  key: { sourceId: row.source_id, destinationId: row.destination_id, url: row.url },
  state: row.state === "open" || row.state === "probing" ? row.state : "closed",
  failures: Number(row.failures),
  nextProbeAt: Number(row.next_probe_at)
})

const columns = "source_id, destination_id, url, state, failures, next_probe_at"

/**
 * The endpoint share on PostgreSQL (migration 18): each operation is one statement on the store's pool, so that two
 * processes racing for the same transition are ordered by the row's lock and exactly one of them sees it happen.
 * Start instants are reserved on the database's clock, so the processes' own clocks need not agree.
 */
export const make = (sql: SqlClient.SqlClient): EndpointShareShape => {
  // This process as a probe holder: only it may end the probe it took.
  const owner = randomUUID()
  const where = (key: EndpointKey) =>
    sql`source_id = ${key.sourceId} AND destination_id = ${key.destinationId} AND url = ${key.url}`

  // The clock is read again after the row's lock is held: a statement that waited for another's reservation neither
  // starts its instants in the past nor answers with a time from before its wait.
  const clockNow = sql.literal("extract(epoch FROM clock_timestamp()) * 1000")
  const reserveStarts: EndpointShareShape["reserveStarts"] = (key, interval, count) => {
    const span = count * interval
    return Effect.map(
      sql<{ first: number | string; now: number | string }>`
        INSERT INTO endpoint_rates AS r (source_id, destination_id, url, next_free_at, reserved_at)
        SELECT ${key.sourceId}, ${key.destinationId}, ${key.url}, now + ${span}, now FROM (SELECT ${clockNow} AS now) c
        ON CONFLICT (source_id, destination_id, url) DO UPDATE
          SET next_free_at = greatest(r.next_free_at, ${clockNow}) + ${span}, reserved_at = ${clockNow}
        RETURNING next_free_at - ${span} AS first, ${clockNow} AS now`,
      (rows) => ({ first: Number(rows[0]!.first), now: Number(rows[0]!.now) })
    ).pipe(fail("reserveStarts"))
  }

  // Every value on the right is the row before the update: the transition is decided once, under the row's lock.
  const failed: EndpointShareShape["failed"] = (key, { now, probe, threshold }) => {
    const token = randomUUID()
    const opens = sql`(c.state = 'closed' AND c.failures + 1 >= ${threshold}::integer)`
    const probeFailed = sql`(c.state = 'probing' AND ${probe}::boolean AND c.probe_owner = ${owner})`
    const firstOpen = 1 >= threshold
    return Effect.map(
      sql<CircuitRow & { changed_by: string | null }>`
        INSERT INTO endpoint_circuits AS c
          (source_id, destination_id, url, state, failures, next_probe_at, cool_off, probe_owner, changed_by)
        VALUES (${key.sourceId}, ${key.destinationId}, ${key.url}, ${firstOpen ? "open" : "closed"}, 1,
          ${now + coolOffFirst}::bigint, ${coolOffFirst}, NULL, ${firstOpen ? token : null})
        ON CONFLICT (source_id, destination_id, url) DO UPDATE SET
          failures = c.failures + 1,
          state = CASE WHEN ${opens} OR ${probeFailed} THEN 'open' ELSE c.state END,
          cool_off = CASE WHEN ${opens} THEN ${coolOffFirst}
            WHEN ${probeFailed} THEN least(c.cool_off * 2, ${coolOffMax}) ELSE c.cool_off END,
          next_probe_at = CASE WHEN ${opens} THEN ${now + coolOffFirst}::bigint
            WHEN ${probeFailed} THEN ${now}::bigint + least(c.cool_off * 2, ${coolOffMax}) ELSE c.next_probe_at END,
          probe_owner = CASE WHEN ${probeFailed} THEN NULL ELSE c.probe_owner END,
          changed_by = CASE WHEN ${opens} THEN ${token} ELSE c.changed_by END
        RETURNING ${sql.literal(columns)}, changed_by`,
      (rows) => ({ circuit: circuitOf(rows[0]!), opened: rows[0]!.changed_by === token })
    ).pipe(fail("circuitFailed"))
  }

  const succeeded: EndpointShareShape["succeeded"] = (key) =>
    Effect.map(
      sql<{ state: string }>`DELETE FROM endpoint_circuits WHERE ${where(key)} RETURNING state`,
      (rows) => rows.some((row) => row.state !== "closed")
    ).pipe(fail("circuitSucceeded"))

  const claimProbe: EndpointShareShape["claimProbe"] = (key, now, lease) =>
    Effect.gen(function*() {
      const won = yield* sql<CircuitRow>`
        UPDATE endpoint_circuits SET state = 'probing', probe_owner = ${owner}, next_probe_at = ${now + lease}::bigint
        WHERE ${where(key)} AND state <> 'closed' AND next_probe_at <= ${now}::bigint
        RETURNING ${sql.literal(columns)}`
      if (won.length > 0) return { won: true, circuit: circuitOf(won[0]!) }
      const rows = yield* sql<CircuitRow>`SELECT ${sql.literal(columns)} FROM endpoint_circuits WHERE ${where(key)}`
      return { won: false, circuit: rows.length === 0 ? undefined : circuitOf(rows[0]!) }
    }).pipe(fail("claimProbe"))

  const probeAborted: EndpointShareShape["probeAborted"] = (key, now) =>
    Effect.asVoid(sql`
      UPDATE endpoint_circuits SET state = 'open', next_probe_at = ${now}::bigint, probe_owner = NULL
      WHERE ${where(key)} AND state = 'probing' AND probe_owner = ${owner}`).pipe(fail("probeAborted"))

  const circuits: EndpointShareShape["circuits"] = Effect.map(
    sql<CircuitRow>`SELECT ${sql.literal(columns)} FROM endpoint_circuits`,
    (rows) => rows.map(circuitOf)
  ).pipe(fail("circuits"))

  return { reserveStarts, failed, succeeded, claimProbe, probeAborted, circuits }
}
