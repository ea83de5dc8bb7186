import { Array as Arr, Effect } from "effect"
import type * as Statement from "effect/sql/Statement"
import { withCarriedJobs } from "./CarriedJobs.js"
import type { LogDestination, LogMessage, LogStatus, MessageLogQuery } from "./MessageLogQuery.js"
import { BadCursor } from "./MessageLogQuery.js"
import { idChunk, num, numOrNull } from "./Rows.js"
import type { StoreKit } from "./StoreKit.js"

/** The rows of the message log and of its messages' jobs, and the cursor, as the listing reads them. */

export const logColumns = "seq, source_id, message_id, received_at, type, event, user_id, anonymous_id, job_count"

export interface LogRow {
  readonly seq: unknown
  readonly source_id: string
  readonly message_id: string
  readonly received_at: unknown
  readonly type: string | null
  readonly event: string | null
  readonly user_id: string | null
  readonly anonymous_id: string | null
  readonly job_count: unknown
}

export interface LogJobRow {
  readonly id: string
  readonly source_id: string
  readonly destination_id: string
  readonly message_id: string
  readonly status: string
  readonly attempts: unknown
  readonly created_at: unknown
  /** The jobs the row carries, not made yet (`CarriedJobs`). */
  readonly fan_out?: string | null
}

/** A message's jobs are found by their id: it begins with their creation time, which is the message's receipt. */
export const idPrefix = (at: number) => Math.max(0, Math.floor(at)).toString(16).padStart(12, "0")

export const messageKey = (sourceId: string, messageId: string, receivedAt: number) =>
  `${sourceId}\u0000${messageId}\u0000${receivedAt}`

export const rowKey = (row: LogRow) => messageKey(row.source_id, row.message_id, num(row.received_at))

export const jobStatus = (status: string, attempts: number): Exclude<LogStatus, "filtered"> =>
  status === "pending"
    ? attempts > 0 ? "delivering" : "pending"
    : status === "delivering" || status === "delivered" || status === "dead"
    ? status
    : "delivering"

/** Receipts further apart than this read their jobs through ranges of their own (a sparse source's messages). */
const clusterGapMs = 1000

/**
 * The id range of a message's jobs around one of them (`near`): stored before migration 21 they were drawn together,
 * one counter each, so they lie within `jobCount` counters of it; since, they share their row's counter (`<row id>.<n>`,
 * `CarriedJobs`), inside the same range. Undefined where the counter would wrap.
 */
const rangeNear = (near: string, jobCount: number): [string, string] | undefined => {
  const counter = parseInt(near.slice(12, 20), 16)
  const from = counter - (jobCount - 1)
  const to = counter + jobCount
  if (!Number.isSafeInteger(counter) || from < 0 || to > 0xffff_ffff) return undefined
  const prefix = near.slice(0, 12)
  return [prefix + from.toString(16).padStart(8, "0"), prefix + to.toString(16).padStart(8, "0")]
}

/**
 * The jobs of these log rows by message key, in id order: per source, one id range per cluster of receipt times, or
 * around a job of the message already known (`near`, by message key).
 */
export const jobsOfRows = (
  { reads, sql }: StoreKit,
  rows: ReadonlyArray<LogRow>,
  near?: ReadonlyMap<string, string>
): Effect.Effect<Map<string, Array<LogJobRow>>, unknown> =>
  Effect.gen(function*() {
    const wanted = new Set<string>()
    const timesBySource = new Map<string, Set<number>>()
    const rangesBySource = new Map<string, Array<[string, string]>>()
    for (const row of rows) {
      if (num(row.job_count) === 0) continue
      wanted.add(rowKey(row))
      const known = near?.get(rowKey(row))
      const range = known === undefined ? undefined : rangeNear(known, num(row.job_count))
      if (range !== undefined) {
        rangesBySource.set(row.source_id, [...(rangesBySource.get(row.source_id) ?? []), range])
        continue
      }
      const times = timesBySource.get(row.source_id) ?? new Set<number>()
      times.add(num(row.received_at))
      timesBySource.set(row.source_id, times)
    }
    for (const [sourceId, times] of timesBySource) {
      const sorted = Array.from(times).sort((a, b) => a - b)
      const clusters: Array<[number, number]> = []
      for (const at of sorted) {
        const last = clusters[clusters.length - 1]
        if (last !== undefined && at - last[1] <= clusterGapMs) last[1] = at
        else clusters.push([at, at])
      }
      const ranges = rangesBySource.get(sourceId) ?? []
      for (const [from, to] of clusters) ranges.push([idPrefix(from), idPrefix(to + 1)])
      rangesBySource.set(sourceId, ranges)
    }
    const byKey = new Map<string, Array<LogJobRow>>()
    for (const [sourceId, ranges] of rangesBySource) {
      for (const chunk of Arr.chunksOf(ranges, 100)) {
        // One range scan of the primary key per arm: SQLite reads ORed ranges with a scan of the whole table.
        const arms = chunk.map(([from, to]) =>
          sql`SELECT id, source_id, destination_id, message_id, status, attempts, created_at, fan_out FROM jobs
            WHERE id >= ${from} AND id < ${to} AND source_id = ${sourceId} AND kind = 'message'`
        )
        const jobs = withCarriedJobs(yield* reads<LogJobRow>`${sql.join(" UNION ALL ", false)(arms)}`)
        jobs.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
        for (const job of jobs) {
          const key = messageKey(job.source_id, job.message_id, num(job.created_at))
          if (!wanted.has(key)) continue
          const list = byKey.get(key)
          if (list === undefined) byKey.set(key, [job])
          else list.push(job)
        }
      }
    }
    return byKey
  })

/** Whether a message passes the status and destination filters (given both, one job must pass both). */
export const passesJobFilters = (
  query: MessageLogQuery,
  row: LogRow,
  jobs: ReadonlyArray<LogJobRow>
): boolean => {
  const statuses = query.statuses
  const destinations = query.destinationIds
  if (num(row.job_count) === 0) {
    return (destinations === undefined || destinations.length === 0) && (statuses?.includes("filtered") ?? true)
  }
  return jobs.some((job) =>
    (statuses === undefined || statuses.length === 0 ||
      statuses.includes(jobStatus(job.status, num(job.attempts)))) &&
    (destinations === undefined || destinations.length === 0 || destinations.includes(job.destination_id))
  )
}

/** The page's messages with their jobs and each job's last attempt (`attempts_job`, in chunks of ids). */
export const toLogMessages = (
  { reads, sql }: StoreKit,
  rows: ReadonlyArray<LogRow>,
  jobs: ReadonlyMap<string, ReadonlyArray<LogJobRow>>
) =>
  Effect.gen(function*() {
    const jobIds = rows.flatMap((row) => (jobs.get(rowKey(row)) ?? []).map((job) => job.id))
    const last = new Map<string, { statusCode: number | null; at: number }>()
    for (const ids of Arr.chunksOf(jobIds, idChunk)) {
      const attempts = yield* reads<{ job_id: string; status_code: unknown; started_at: unknown }>`
        SELECT job_id, status_code, started_at FROM attempts WHERE ${sql.in("job_id", ids)} ORDER BY started_at, id`
      for (const attempt of attempts) {
        last.set(attempt.job_id, { statusCode: numOrNull(attempt.status_code), at: num(attempt.started_at) })
      }
    }
    return rows.map((row): LogMessage => ({
      messageId: row.message_id,
      sourceId: row.source_id,
      type: row.type ?? "",
      event: row.event,
      userId: row.user_id,
      anonymousId: row.anonymous_id,
      receivedAt: num(row.received_at),
      destinations: (jobs.get(rowKey(row)) ?? []).map((job): LogDestination => ({
        destinationId: job.destination_id,
        jobId: job.id,
        status: jobStatus(job.status, num(job.attempts)),
        attempts: num(job.attempts),
        lastAttempt: last.get(job.id) ?? null
      }))
    }))
  })

/** The filters a log row answers itself, as SQL. */
export const rowFilters = (sql: StoreKit["sql"], query: MessageLogQuery): Array<Statement.Fragment> => {
  const filters: Array<Statement.Fragment> = []
  const any = (column: string, values: ReadonlyArray<string> | undefined) => {
    if (values !== undefined && values.length > 0) filters.push(sql.in(column, values))
  }
  any("type", query.types)
  any("event", query.events)
  any("user_id", query.userIds)
  any("anonymous_id", query.anonymousIds)
  if (query.since !== undefined) filters.push(sql`received_at >= ${query.since}`)
  if (query.until !== undefined) filters.push(sql`received_at < ${query.until}`)
  const statuses = query.statuses
  const destinations = query.destinationIds
  if (destinations !== undefined && destinations.length > 0) filters.push(sql`job_count > 0`)
  else if (statuses !== undefined && statuses.length > 0 && !statuses.includes("filtered")) {
    filters.push(sql`job_count > 0`)
  } else if (statuses !== undefined && statuses.length === 1) filters.push(sql`job_count = 0`)
  return filters
}

/** The same filters, on a row already read (the dead letters' path reads rows by key). */
export const rowPasses = (query: MessageLogQuery, row: LogRow): boolean => {
  const any = (values: ReadonlyArray<string> | undefined, value: string | null) =>
    values === undefined || values.length === 0 || (value !== null && values.includes(value))
  const at = num(row.received_at)
  return any(query.types, row.type) && any(query.events, row.event) && any(query.userIds, row.user_id) &&
    any(query.anonymousIds, row.anonymous_id) && (query.since === undefined || at >= query.since) &&
    (query.until === undefined || at < query.until)
}

/**
 * The cursor: base64url of the walk's position, `{ s }` the log's seq the next page reads below, or `{ j, m }` the
 * dead job id it reads below and the message id already listed at that receipt time.
 */
export type Cursor = { readonly s: number } | { readonly j: string; readonly m: string }

export const encodeCursor = (cursor: Cursor): string => Buffer.from(JSON.stringify(cursor)).toString("base64url")

export const decodeCursor = (text: string): Effect.Effect<Cursor, BadCursor> =>
  Effect.suspend((): Effect.Effect<Cursor, BadCursor> => {
    try {
      const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
      if (typeof value === "object" && value !== null) {
        const { j, m, s } = value as Record<string, unknown>
        if (typeof s === "number" && Number.isSafeInteger(s) && s >= 0 && j === undefined) {
          return Effect.succeed({ s })
        }
        if (typeof j === "string" && typeof m === "string" && /^[0-9a-f]{12}/.test(j) && s === undefined) {
          return Effect.succeed({ j, m })
        }
      }
    } catch {
      // Not JSON: refused below.
    }
    return Effect.fail(new BadCursor({ cursor: text }))
  })
