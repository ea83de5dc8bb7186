import { Effect } from "effect"
import { summaryColumns, type SummaryRow, toSummary } from "./JobSummaries.js"
import type { StoreShape } from "./Model.js"
import { fail, type StoreKit } from "./StoreKit.js"

/** Dead letters: the jobs every URL refused, listed newest first and replayed on an operator's word. */
export const make = ({ reads, sql }: StoreKit): Pick<StoreShape, "listDeadLetters" | "replayDeadLetter"> => {
  const summary = sql.literal(summaryColumns)

  const listDeadLetters = Effect.fn("Store.listDeadLetters")(
    function*(options: {
      readonly sourceId?: string | undefined
      readonly limit: number
      readonly before?: number | undefined
    }) {
      const conditions = [sql`status = 'dead'`]
      if (options.sourceId !== undefined) conditions.push(sql`source_id = ${options.sourceId}`)
      if (options.before !== undefined) conditions.push(sql`finished_at < ${options.before}`)
      const rows = yield* reads<SummaryRow>`
        SELECT ${summary} FROM jobs WHERE ${sql.and(conditions)}
        ORDER BY finished_at DESC, id DESC LIMIT ${Math.max(0, Math.floor(options.limit))}`
      return rows.map(toSummary)
    },
    fail("listDeadLetters")
  )

  const replayDeadLetter = Effect.fn("Store.replayDeadLetter")(
    function*(jobId: string, now: number) {
      const rows = yield* sql<{ id: string }>`
        UPDATE jobs SET status = 'pending', next_due_at = ${now}, first_attempt_at = NULL,
          endpoint_state = NULL, attempts = 0, finished_at = NULL, last_error = NULL,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${jobId} AND status = 'dead'
        RETURNING id`
      return rows.length > 0
    },
    fail("replayDeadLetter")
  )

  return { listDeadLetters, replayDeadLetter }
}
