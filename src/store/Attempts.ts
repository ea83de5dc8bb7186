import { Array as Arr, Context, Effect } from "effect"
import type { AttemptRecord } from "./Model.js"
import { attemptRow, countPerJob, idChunk, jsonChunk } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit, untraced } from "./StoreKit.js"

export interface AttemptsShape {
  /** Inserts attempts and adds them to their jobs' attempt counts (not lease-guarded: they happened). */
  readonly recordAttempts: (records: ReadonlyArray<AttemptRecord>) => Effect.Effect<void, StoreError>
  /** Persists the start of the retry window if it is not set yet; `false` when it already was. */
  readonly markFirstAttempt: (jobId: string, at: number) => Effect.Effect<boolean, StoreError>
}

/** The attempt records of jobs, the count of attempts each job keeps beside them, and the start of its retry window. */
export class Attempts extends Context.Service<Attempts, AttemptsShape>()("hookrelay/store/Attempts") {}

/** SQLite: attempts as one JSON parameter of arrays (see `attemptRow`). Parameter: the JSON. */
const sqliteInsertAttempts = `
  INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet)
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7,
    value ->> 8
  FROM json_each(?)`

export const makeWrites = ({ sql }: StoreKit) => {
  /** Keeps jobs.attempts equal to the attempts recorded: one UPDATE per distinct increment. */
  const incrementAttempts = (perJob: ReadonlyMap<string, number>) =>
    Effect.gen(function*() {
      const byIncrement = new Map<number, Array<string>>()
      for (const [jobId, n] of perJob) {
        const ids = byIncrement.get(n)
        if (ids === undefined) byIncrement.set(n, [jobId])
        else ids.push(jobId)
      }
      for (const [n, ids] of byIncrement) {
        for (const chunk of Arr.chunksOf(ids, idChunk)) {
          yield* sql`UPDATE jobs SET attempts = attempts + ${n} WHERE ${sql.in("id", chunk)}`
        }
      }
    })

  // Attempts go in as one JSON parameter of arrays, so the SQL text is the same whatever the row count: prepared once
  // (a multi-row VALUES list changes its text with every batch size and was prepared again on most flushes).
  const insertAttemptsStatement = (json: string) =>
    sql.onDialectOrElse({
      pg: () =>
        sql`
          INSERT INTO attempts (job_id, url, attempt, started_at, duration_ms, status_code, error, outcome, response_snippet)
          SELECT v ->> 0, v ->> 1, (v ->> 2)::integer, (v ->> 3)::bigint, (v ->> 4)::integer, (v ->> 5)::integer,
            v ->> 6, v ->> 7, v ->> 8
          FROM jsonb_array_elements(${json}::jsonb) AS v`,
      orElse: () => sql.unsafe(sqliteInsertAttempts, [json])
    })

  const insertAttempts = (records: ReadonlyArray<AttemptRecord>) =>
    Effect.gen(function*() {
      if (records.length === 0) return
      const rows = records.map(attemptRow)
      for (const chunk of Arr.chunksOf(rows, jsonChunk)) yield* insertAttemptsStatement(JSON.stringify(chunk))
    })

  return { incrementAttempts, insertAttempts }
}

export type AttemptWriter = ReturnType<typeof makeWrites>

export const make = ({ sql }: StoreKit, writes: AttemptWriter): AttemptsShape => {
  const recordAttempts = Effect.fn("Store.recordAttempts")(
    function*(records: ReadonlyArray<AttemptRecord>) {
      if (records.length === 0) return
      yield* sql.withTransaction(
        Effect.andThen(writes.insertAttempts(records), writes.incrementAttempts(countPerJob(records)))
      )
    },
    untraced,
    fail("recordAttempts")
  )

  const markFirstAttempt = Effect.fn("Store.markFirstAttempt")(
    function*(jobId: string, at: number) {
      const rows = yield* sql<{ id: string }>`
        UPDATE jobs SET first_attempt_at = ${at}
        WHERE id = ${jobId} AND first_attempt_at IS NULL
        RETURNING id`
      return rows.length > 0
    },
    untraced,
    fail("markFirstAttempt")
  )
  return { recordAttempts, markFirstAttempt }
}
