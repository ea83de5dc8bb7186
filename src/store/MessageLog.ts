import { Array as Arr, Context, Effect, Option } from "effect"
import { isSqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { carrierOf, withCarriedJobs } from "./CarriedJobs.js"
import {
  attemptColumns,
  type AttemptRow,
  summaryColumns,
  type SummaryRow,
  toAttempt,
  toSummary
} from "./JobSummaries.js"
import { makeListing } from "./MessageLogListing.js"
import { BadCursor, type MessageLogPage, type MessageLogQuery } from "./MessageLogQuery.js"
import type { JobKind, JobSummary, JobWithAttempts, MessageRecord, MessageSearch } from "./Model.js"
import { idChunk, num } from "./Rows.js"
import { StoreError } from "./StoreError.js"
import { fail, type StoreKit, typeOfKind } from "./StoreKit.js"

export interface MessageLogShape {
  readonly getJob: (jobId: string) => Effect.Effect<Option.Option<JobSummary>, StoreError>
  readonly jobsForMessage: (messageId: string) => Effect.Effect<ReadonlyArray<JobWithAttempts>, StoreError>
  /**
   * Messages newest first, at most `limit`, each with all its jobs and their attempts: the newest
   * jobs in id order (ids start with their creation time), of the user and/or the source. There is
   * no index by user: a user's search reads back through the outbox until it has `limit` jobs.
   */
  readonly searchMessages: (search: MessageSearch) => Effect.Effect<ReadonlyArray<MessageRecord>, StoreError>
  /** The operator's message log (REFERENCE §12), newest first, a page at a time (`MessageLogListing`). */
  readonly listMessages: (query: MessageLogQuery) => Effect.Effect<MessageLogPage, StoreError | BadCursor>
}

/** The message log: a job by id, the jobs of a message id, and the messages of a user or a source, newest first. */
export class MessageLog extends Context.Service<MessageLog, MessageLogShape>()("hookrelay/store/MessageLog") {}

type MessageJobRow = SummaryRow & { readonly message_type: string | null; readonly event: string | null }

/** The jobs with their attempts, read through `attempts_job` in chunks of ids. */
const withAttempts = ({ reads, sql }: StoreKit, jobs: ReadonlyArray<SummaryRow>) =>
  Effect.gen(function*() {
    if (jobs.length === 0) return []
    const attempts = yield* Effect.forEach(
      Arr.chunksOf(jobs.map((job) => job.id), idChunk),
      (ids) =>
        reads<AttemptRow>`
          SELECT ${sql.literal(attemptColumns)}
          FROM attempts WHERE ${sql.in("job_id", ids)}
          ORDER BY started_at, id`
    )
    const byJob = Arr.groupBy(attempts.flat().map(toAttempt), (attempt) => attempt.jobId)
    return jobs.map((row): JobWithAttempts => ({ ...toSummary(row), attempts: byJob[row.id] ?? [] }))
  })

/**
 * The jobs of these message ids. SQLite has no index of jobs by message id (migration 9): their ids are in
 * `message_jobs`, or still in `message_id_log` (not yet merged: a few tens of thousands of rows at most, read whole).
 */
const jobsOfMessages = <Row extends SummaryRow>(
  { reads, sql }: StoreKit,
  columns: Statement.Fragment,
  messageIds: ReadonlyArray<string>
) =>
  Effect.map(
    sql.onDialectOrElse({
      // The jobs a row made name it in `body_id` (migration 21): found through `jobs_body`.
      sqlite: () =>
        reads<Row>`
          WITH found AS (
            SELECT job_id AS id FROM message_jobs WHERE ${sql.in("message_id", messageIds)}
            UNION ALL
            SELECT job_id FROM message_id_log WHERE job_id IS NOT NULL AND ${sql.in("message_id", messageIds)})
          SELECT ${columns}, fan_out FROM jobs
          WHERE id IN (SELECT id FROM found) OR body_id IN (SELECT id FROM found)
          ORDER BY created_at, id`,
      orElse: () =>
        reads<Row>`
          SELECT ${columns}, fan_out FROM jobs WHERE ${sql.in("message_id", messageIds)} ORDER BY created_at, id`
    }),
    withCarriedJobs
  )

const keyOf = (sourceId: string, messageId: string) => `${sourceId}\u0000${messageId}`

/** The messages of `order`'s keys in its order, each with its jobs (`rows`, oldest first, and `jobs` beside them). */
const toRecords = (
  order: ReadonlyMap<string, number>,
  rows: ReadonlyArray<MessageJobRow>,
  jobs: ReadonlyArray<JobWithAttempts>
) => {
  const grouped = new Map<string, { rows: Array<MessageJobRow>; jobs: Array<JobWithAttempts> }>()
  rows.forEach((row, i) => {
    const key = keyOf(row.source_id, row.message_id)
    const group = grouped.get(key) ?? { rows: [], jobs: [] }
    group.rows.push(row)
    group.jobs.push(jobs[i]!)
    grouped.set(key, group)
  })
  const records: Array<MessageRecord> = []
  for (const key of order.keys()) {
    const group = grouped.get(key)
    if (group === undefined) continue // purged between the two reads
    const last = group.rows[group.rows.length - 1]!
    records.push({
      messageId: last.message_id,
      sourceId: last.source_id,
      userId: last.user_id,
      type: last.message_type ?? typeOfKind(last.kind as JobKind),
      event: last.event,
      receivedAt: num(last.created_at),
      jobs: group.jobs
    })
  }
  return records
}

export const make = (kit: StoreKit): MessageLogShape => {
  const { reads, sql } = kit
  const summary = sql.literal(summaryColumns)
  const summaryWithType = sql.literal(`${summaryColumns}, message_type, event`)

  const getJob = Effect.fn("Store.getJob")(
    function*(jobId: string) {
      const rows = yield* reads<SummaryRow>`SELECT ${summary} FROM jobs WHERE id = ${jobId}`
      if (rows.length > 0) return Option.some(toSummary(rows[0]!))
      // A job not made yet is read from the row that carries it (migration 21).
      const carrier = carrierOf(jobId)
      if (carrier === undefined) return Option.none()
      const carried = yield* reads<SummaryRow>`
        SELECT ${summary}, fan_out FROM jobs WHERE id = ${carrier} AND fan_out IS NOT NULL`
      return Option.map(Arr.findFirst(withCarriedJobs(carried), (row) => row.id === jobId), toSummary)
    },
    fail("getJob")
  )

  const jobsForMessage = Effect.fn("Store.jobsForMessage")(
    function*(messageId: string) {
      const jobs = yield* jobsOfMessages<SummaryRow>(kit, summary, [messageId])
      return yield* withAttempts(kit, jobs)
    },
    fail("jobsForMessage")
  )

  const searchMessages = Effect.fn("Store.searchMessages")(
    function*(search: MessageSearch) {
      const limit = Math.max(0, Math.floor(search.limit))
      if (limit === 0 || (search.userId === undefined && search.sourceId === undefined)) return []
      // The newest jobs, then the messages they belong to in that order (a message ingested again
      // after the 24 h dedupe window has two jobs: it is listed once, so fewer than `limit` may come).
      // Job ids start with their creation time: the primary key walked backwards is newest first, and
      // a user's search stops at its `limit`-th job (there is no index by user, migration 8: a user
      // without recent jobs is looked for through the whole outbox, on the reading connection).
      const newest = search.userId !== undefined
        ? yield* reads<{ source_id: string; message_id: string }>`
          SELECT source_id, message_id FROM jobs
          WHERE user_id = ${search.userId}${
          search.sourceId === undefined ? sql`` : sql` AND source_id = ${search.sourceId}`
        }
          ORDER BY id DESC LIMIT ${limit}`
        : yield* reads<{ source_id: string; message_id: string }>`
          SELECT source_id, message_id FROM jobs WHERE source_id = ${search.sourceId!}
          ORDER BY id DESC LIMIT ${limit}`
      const order = new Map<string, number>()
      for (const row of newest) {
        const key = keyOf(row.source_id, row.message_id)
        if (!order.has(key)) order.set(key, order.size)
      }
      if (order.size === 0) return []
      const messageIds = Array.from(new Set(newest.map((row) => row.message_id)))
      const rows = (yield* Effect.forEach(
        Arr.chunksOf(messageIds, idChunk),
        (ids) => jobsOfMessages<MessageJobRow>(kit, summaryWithType, ids)
      )).flat().filter((row) => order.has(keyOf(row.source_id, row.message_id)))
      return toRecords(order, rows, yield* withAttempts(kit, rows))
    },
    fail("searchMessages")
  )

  const listing = makeListing(kit)
  // A bad cursor stays itself; everything else is the store's, a dropped connection's defect included (as `fail`).
  const listMessages = (query: MessageLogQuery) =>
    listing(query).pipe(
      Effect.catchDefect((defect) => isSqlError(defect) ? Effect.fail(defect) : Effect.die(defect)),
      Effect.mapError((error) =>
        error instanceof BadCursor ? error : new StoreError({ operation: "listMessages", cause: error })
      ),
      Effect.withSpan("Store.listMessages")
    )

  return { getJob, jobsForMessage, searchMessages, listMessages }
}
