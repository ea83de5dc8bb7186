import { Array as Arr, Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { AttemptWriter } from "../Attempts.js"
import type { AttemptRecord, CompleteResult, Completion } from "../Model.js"
import { type CompletionRow, completionRows, idChunk, jsonChunk } from "../Rows.js"
import { fail, type StoreKit, untraced } from "../StoreKit.js"
import type { UsageWriter } from "../Usage.js"
import { makeTally } from "../UsageRows.js"

const emptyBlob = "''::bytea"

// One UPDATE for a whole batch of completions, rows joined from one JSON parameter. The lease
// guard (delivering, owned by the caller) is in the WHERE clause, so a job whose lease was taken
// over is left alone and reported as refused.
const completeStatement = (sql: SqlClient.SqlClient, owner: string, rows: ReadonlyArray<CompletionRow>) =>
  sql<{
    id: string
    source_id: string
    destination_id: string
    status: string
    finished_at: unknown
    created_at: unknown
  }>`
    UPDATE jobs AS j SET
      status = v.status,
      finished_at = v.at,
      attempts = j.attempts + v.inc,
      next_due_at = coalesce(v.due, j.next_due_at),
      first_attempt_at = coalesce(j.first_attempt_at, v.first),
      endpoint_state = coalesce(v.state, j.endpoint_state),
      last_error = CASE WHEN v.status = 'delivered' THEN j.last_error ELSE v.err END,
      body = CASE WHEN v.status = 'delivered' THEN ${sql.literal(emptyBlob)} ELSE j.body END,
      lease_owner = NULL,
      lease_expires_at = NULL
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS v(id text, status text, at bigint, due bigint, first bigint, state text, err text, inc integer)
    WHERE j.id = v.id AND j.status = 'delivering' AND j.lease_owner = ${owner}
    RETURNING j.id, j.source_id, j.destination_id, j.status, j.finished_at, j.created_at`

// The common completion, a delivery with nothing else to keep, in a statement of its own that writes only what a
// delivery changes: fewer columns per row, and next_due_at untouched (no jobs_due work). Rows are
// `[id, at, first, inc]` arrays.
const completeDeliveredStatement = (sql: SqlClient.SqlClient, owner: string, json: string) =>
  sql<{ id: string; source_id: string; destination_id: string; finished_at: unknown; created_at: unknown }>`
    UPDATE jobs AS j SET
      status = 'delivered',
      finished_at = (v ->> 1)::bigint,
      attempts = j.attempts + (v ->> 3)::integer,
      first_attempt_at = coalesce(j.first_attempt_at, (v ->> 2)::bigint),
      body = ${sql.literal(emptyBlob)},
      lease_owner = NULL,
      lease_expires_at = NULL
    FROM jsonb_array_elements(${json}::jsonb) AS v
    WHERE j.id = v ->> 0 AND j.status = 'delivering' AND j.lease_owner = ${owner}
    RETURNING j.id, j.source_id, j.destination_id, j.finished_at, j.created_at`

/** PostgreSQL's completion batch: attempts, lease-guarded updates and usage in one transaction. */
export const makeComplete = ({ sql }: StoreKit, attemptWrites: AttemptWriter, usageWrites: UsageWriter) => {
  // PostgreSQL plans the completion joins (jobs ⋈ the JSON rows) from its estimates: few 'delivering' jobs, 100 rows
  // from a JSON function. It then picks a nested loop that extracts every JSON row's id once per leased job, growing
  // with the square of the batch. A hash join does the same in a few ms whatever the estimates: nested loops are off
  // for this transaction only.
  const noNestedLoops = Effect.asVoid(sql`SET LOCAL enable_nestloop = off`)

  return Effect.fn("Store.completeMany")(
    function*(owner: string, completions: ReadonlyArray<Completion>, attempts?: ReadonlyArray<AttemptRecord>) {
      const { increments, other, plain, rows } = completionRows(completions, attempts)
      if (rows.length === 0 && (attempts === undefined || attempts.length === 0)) {
        return { applied: [], refused: [] } satisfies CompleteResult
      }
      return yield* sql.withTransaction(Effect.gen(function*() {
        if (rows.length > 0) yield* noNestedLoops
        if (attempts !== undefined) yield* attemptWrites.insertAttempts(attempts)
        const tally = makeTally()
        for (const chunk of Arr.chunksOf(plain, jsonChunk)) {
          // The statement reads each job's source and creation time itself (RETURNING): the first four fields only.
          const json = JSON.stringify(chunk.map(([id, at, first, inc]) => [id, at, first, inc]))
          for (const row of yield* completeDeliveredStatement(sql, owner, json)) {
            tally.count(row, "delivered")
          }
        }
        for (const chunk of Arr.chunksOf(other, idChunk)) {
          for (const row of yield* completeStatement(sql, owner, chunk)) tally.count(row, row.status)
        }
        yield* usageWrites.bumpUsage(Array.from(tally.usage.values()))
        // Attempts of jobs not completed here (or whose completion was refused) still count.
        for (const jobId of tally.applied) increments.delete(jobId)
        yield* attemptWrites.incrementAttempts(increments)
        return tally.result(rows)
      }))
    },
    untraced,
    fail("completeMany")
  )
}
