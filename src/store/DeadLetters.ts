import { Array as Arr, Context, Effect } from "effect"
import { summaryColumns, type SummaryRow, toSummary } from "./JobSummaries.js"
import type { JobSummary } from "./Model.js"
import { idChunk } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit } from "./StoreKit.js"

export interface DeadLettersShape {
  /** Newest first. `before` pages by finished time. */
  readonly listDeadLetters: (options: {
    readonly sourceId?: string | undefined
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<JobSummary>, StoreError>
  /** Dead → pending, due `now`, with a fresh retry window and reset endpoint state. `false` if not dead. */
  readonly replayDeadLetter: (jobId: string, now: number) => Effect.Effect<boolean, StoreError>
}

/** Dead letters listed and replayed one at a time. */
export class DeadLetters extends Context.Service<DeadLetters, DeadLettersShape>()("hookrelay/store/DeadLetters") {}

/**
 * A replay: the dead letters among `ids` back to pending, due `now`, with a fresh window and no progress. The one
 * transition of the single replay and the bulk one. Answers how many were dead.
 */
export const replayJobs = (sql: StoreKit["sql"], ids: ReadonlyArray<string>, now: number) =>
  Effect.gen(function*() {
    let replayed = 0
    for (const chunk of Arr.chunksOf(ids, idChunk)) {
      const rows = yield* sql<{ id: string }>`
        UPDATE jobs SET status = 'pending', next_due_at = ${now}, first_attempt_at = NULL,
          endpoint_state = NULL, attempts = 0, finished_at = NULL, last_error = NULL,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE ${sql.in("id", chunk)} AND status = 'dead'
        RETURNING id`
      replayed += rows.length
    }
    return replayed
  })

/** Dead letters: the jobs every URL refused, listed newest first and replayed on an operator's word. */
export const make = ({ reads, sql }: StoreKit): DeadLettersShape => {
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
      return (yield* replayJobs(sql, [jobId], now)) > 0
    },
    fail("replayDeadLetter")
  )

  return { listDeadLetters, replayDeadLetter }
}
