import { Array as Arr, Effect } from "effect"
import type { LogMessage, MessageLogPage, MessageLogQuery } from "./MessageLogQuery.js"
import { BadCursor } from "./MessageLogQuery.js"
import {
  type Cursor,
  decodeCursor,
  encodeCursor,
  idPrefix,
  jobsOfRows,
  logColumns,
  type LogJobRow,
  type LogRow,
  passesJobFilters,
  rowFilters,
  rowKey,
  rowPasses,
  toLogMessages
} from "./MessageLogRows.js"
import { idChunk, num } from "./Rows.js"
import type { StoreKit } from "./StoreKit.js"

/**
 * The message log's listing (REFERENCE §12), newest first. Two walks:
 * - the log's: `message_log` backwards by seq, each source through `(source_id, seq)` (all sources: those the log
 *   holds, found one index seek each), a window of rows at a time; the row filters are SQL, the status and destination filters are checked against the
 *   window's jobs. Cursor `{ s }`: the seq the next page reads below.
 * - the dead letters': a listing of status `dead` alone starts from the dead jobs (`jobs_dead_by_id`, newest id
 *   first, since/until as id bounds), then reads their messages' rows by `jobs.log_seq`. Cursor `{ j, m }`.
 * Either walk examines at most `scanBudget` rows per request: when it runs out first, the page holds what matched so
 * far (possibly nothing) and `next` where the walk stopped.
 */
export const scanBudget = 20_000

/** Receipt times out of seq order by less than this (clocks of several processes) still meet a since/until seek. */
const seekSlackMs = 5_000

const endOfLog = Number.MAX_SAFE_INTEGER

const nonEmpty = (values: ReadonlyArray<string> | undefined): values is ReadonlyArray<string> =>
  values !== undefined && values.length > 0

export const makeListing = (kit: StoreKit) => {
  const { reads, sql } = kit
  const columns = sql.literal(logColumns)

  /** The sources the log holds rows of: one seek each through `(source_id, seq)`, not a scan of the log. */
  const logSources = Effect.gen(function*() {
    const sources: Array<string> = []
    for (;;) {
      const rows = yield* reads<{ source_id: string }>`
        SELECT source_id FROM message_log WHERE source_id > ${sources[sources.length - 1] ?? ""}
        ORDER BY source_id LIMIT 1`
      if (rows[0] === undefined) return sources
      sources.push(rows[0].source_id)
    }
  })

  /** The first row at or after `seq` (of the source): its seq and receipt. */
  const rowFrom = (sourceId: string, seq: number) =>
    Effect.map(
      reads<{ seq: unknown; received_at: unknown }>`
        SELECT seq, received_at FROM message_log WHERE source_id = ${sourceId} AND seq >= ${seq}
        ORDER BY seq LIMIT 1`,
      (rows) => rows[0] === undefined ? undefined : { seq: num(rows[0].seq), at: num(rows[0].received_at) }
    )

  /**
   * The least seq from which the source's rows were received at `at` or later, by bisection over seq (receipts grow
   * with seq, up to the slack the callers add). An index seek per step: there is no index by time.
   */
  const seqAt = (sourceId: string, at: number) =>
    Effect.gen(function*() {
      const first = yield* rowFrom(sourceId, 0)
      if (first === undefined || first.at >= at) return 0
      const lastRows = yield* reads<{ seq: unknown }>`
        SELECT seq FROM message_log WHERE source_id = ${sourceId} ORDER BY seq DESC LIMIT 1`
      let low = first.seq
      let high = num(lastRows[0]!.seq) + 1
      while (high - low > 1) {
        const middle = Math.floor((low + high) / 2)
        const probe = yield* rowFrom(sourceId, middle)
        if (probe === undefined || probe.at >= at) high = middle
        else low = probe.seq
      }
      return high
    })

  const seekBounds = (query: MessageLogQuery, sources: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      let upper = endOfLog
      let lower = 0
      if (query.until !== undefined) {
        const seeks = yield* Effect.forEach(sources, (s) => seqAt(s, query.until! + seekSlackMs))
        upper = Math.max(...seeks)
      }
      if (query.since !== undefined) {
        const seeks = yield* Effect.forEach(sources, (s) => seqAt(s, query.since! - seekSlackMs))
        lower = Math.min(...seeks)
      }
      return { upper, lower }
    })

  /** The low end of the next window below `upper`: `size` rows of each source at most; undefined: the rest. */
  const windowLow = (sources: ReadonlyArray<string>, upper: number, lower: number, size: number) =>
    Effect.gen(function*() {
      let low: number | undefined
      for (const sourceId of sources) {
        const rows = yield* reads<{ seq: unknown }>`
          SELECT seq FROM message_log WHERE source_id = ${sourceId} AND seq < ${upper} AND seq >= ${lower}
          ORDER BY seq DESC LIMIT 1 OFFSET ${size - 1}`
        if (rows[0] !== undefined) low = Math.max(low ?? 0, num(rows[0].seq))
      }
      return low
    })

  const logWalk = (query: MessageLogQuery, after: number | undefined) =>
    Effect.gen(function*() {
      const sources = nonEmpty(query.sourceIds) ? query.sourceIds : yield* logSources
      if (sources.length === 0) {
        return { matched: [], jobs: new Map<string, ReadonlyArray<LogJobRow>>(), next: undefined }
      }
      const ofSources = sql.in("source_id", sources)
      const filters = rowFilters(sql, query)
      const where = filters.length === 0 ? sql`1 = 1` : sql.and(filters)
      const byJobs = nonEmpty(query.destinationIds) ||
        (query.statuses !== undefined && query.statuses.some((status) => status !== "filtered"))
      const bounds = yield* seekBounds(query, sources)
      let upper = Math.min(after ?? endOfLog, bounds.upper)
      const matched: Array<LogRow> = []
      const jobs = new Map<string, ReadonlyArray<LogJobRow>>()
      let examined = 0
      let size = Math.min(2000, Math.max(200, query.limit * 4))
      while (upper > bounds.lower) {
        if (examined >= scanBudget) return { matched, jobs, next: upper }
        const window = Math.min(size, scanBudget - examined)
        const wanted = query.limit - matched.length
        // Unfiltered, of one source, the rows below `upper` are the page: no window to bound the scan.
        const low = filters.length === 0 && !byJobs && sources.length === 1
          ? bounds.lower
          : (yield* windowLow(sources, upper, bounds.lower, window)) ?? bounds.lower
        const rows = yield* reads<LogRow>`
          SELECT ${columns} FROM message_log
          WHERE ${ofSources} AND seq >= ${low} AND seq < ${upper} AND ${where}
          ORDER BY seq DESC${byJobs ? sql`` : sql` LIMIT ${wanted}`}`
        examined += window * sources.length
        const found = byJobs ? yield* jobsOfRows(kit, rows) : yield* jobsOfRows(kit, rows.slice(0, wanted))
        for (const row of rows) {
          const rowJobs = found.get(rowKey(row)) ?? []
          if (byJobs && !passesJobFilters(query, row, rowJobs)) continue
          matched.push(row)
          jobs.set(rowKey(row), rowJobs)
          if (matched.length === query.limit) return { matched, jobs, next: num(row.seq) }
        }
        upper = low
        size = Math.min(size * 2, 5000)
      }
      return { matched, jobs, next: undefined }
    })

  /** Dead jobs below `before`, newest first, of every source merged: only those no source's next batch could precede. */
  const deadJobs = (query: MessageLogQuery, sources: ReadonlyArray<string>, before: string, size: number) =>
    Effect.gen(function*() {
      const since = query.since === undefined ? sql`` : sql` AND id >= ${idPrefix(query.since)}`
      const to = nonEmpty(query.destinationIds) ? sql` AND ${sql.in("destination_id", query.destinationIds)}` : sql``
      let cutoff: string | undefined
      const all: Array<{ id: string; message_id: string; source_id: string; log_seq: unknown; created_at: unknown }> =
        []
      for (const sourceId of sources) {
        const rows = yield* reads<typeof all[number]>`
          SELECT id, message_id, source_id, log_seq, created_at FROM jobs
          WHERE source_id = ${sourceId} AND status = 'dead' AND id < ${before}${since}${to}
          ORDER BY id DESC LIMIT ${size}`
        all.push(...rows)
        if (rows.length === size && (cutoff === undefined || rows[size - 1]!.id > cutoff)) cutoff = rows[size - 1]!.id
      }
      all.sort((a, b) => a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
      return { rows: cutoff === undefined ? all : all.filter((row) => row.id >= cutoff), more: cutoff !== undefined }
    })

  const deadWalk = (query: MessageLogQuery, after: { j: string; m: string } | undefined) =>
    Effect.gen(function*() {
      const sources = nonEmpty(query.sourceIds)
        ? query.sourceIds
        : (yield* reads<{ source_id: string }>`SELECT DISTINCT source_id FROM jobs WHERE status = 'dead'`)
          .map((row) => row.source_id)
      let before = after?.j ?? "fffffffffffff"
      if (query.until !== undefined && idPrefix(query.until) < before) before = idPrefix(query.until)
      // The message listed last: its other dead jobs (lower ids, the same receipt) are skipped.
      let listed = after === undefined ? undefined : { m: after.m, at: after.j.slice(0, 12) }
      const matched: Array<LogRow> = []
      // A dead job of each message listed: its other jobs were drawn with it (`jobsOfRows`).
      const near = new Map<string, string>()
      let examined = 0
      while (true) {
        if (examined >= scanBudget) return { matched, near, next: { j: before, m: listed?.m ?? "" } }
        const size = Math.min(Math.max(query.limit * 2, 100), scanBudget - examined)
        const { more, rows } = yield* deadJobs(query, sources, before, size)
        examined += rows.length
        // Their messages' rows, by primary key: the seqs of each source.
        const seqsBySource = new Map<string, Set<number>>()
        for (const row of rows) {
          if (row.log_seq === null) continue
          const seqs = seqsBySource.get(row.source_id) ?? new Set<number>()
          seqsBySource.set(row.source_id, seqs.add(num(row.log_seq)))
        }
        const logRows = new Map<string, LogRow>()
        for (const [sourceId, seqs] of seqsBySource) {
          for (const chunk of Arr.chunksOf(Array.from(seqs), idChunk)) {
            for (
              const row of yield* reads<LogRow>`
                SELECT ${columns} FROM message_log WHERE source_id = ${sourceId} AND ${sql.in("seq", chunk)}`
            ) logRows.set(`${sourceId}\u0000${num(row.seq)}`, row)
          }
        }
        for (const job of rows) {
          before = job.id
          if (listed !== undefined && job.message_id === listed.m && job.id.startsWith(listed.at)) continue
          listed = { m: job.message_id, at: job.id.slice(0, 12) }
          const row = job.log_seq === null ? undefined : logRows.get(`${job.source_id}\u0000${num(job.log_seq)}`)
          if (row === undefined || !rowPasses(query, row)) continue
          matched.push(row)
          near.set(rowKey(row), job.id)
          if (matched.length === query.limit) return { matched, near, next: { j: before, m: job.message_id } }
        }
        if (!more) return { matched, near, next: undefined }
      }
    })

  const deadOnly = (query: MessageLogQuery) =>
    query.statuses !== undefined && query.statuses.length > 0 && query.statuses.every((status) => status === "dead")

  return (asked: MessageLogQuery) =>
    Effect.gen(function*() {
      // The route refuses a limit outside 1..1000; the store holds to it as well.
      const query = { ...asked, limit: Math.min(1000, Math.max(1, Math.floor(asked.limit) || 1)) }
      const cursor: Cursor | undefined = query.after === undefined ? undefined : yield* decodeCursor(query.after)
      const dead = deadOnly(query)
      if (cursor !== undefined && ("s" in cursor) === dead) return yield* new BadCursor({ cursor: query.after! })
      let rows: ReadonlyArray<LogRow>
      let jobs: ReadonlyMap<string, ReadonlyArray<LogJobRow>>
      let next: string | null
      if (dead) {
        const walk = yield* deadWalk(query, cursor as { j: string; m: string } | undefined)
        rows = walk.matched
        jobs = yield* jobsOfRows(kit, rows, walk.near)
        next = walk.next === undefined ? null : encodeCursor(walk.next)
      } else {
        const walk = yield* logWalk(query, cursor === undefined ? undefined : (cursor as { s: number }).s)
        rows = walk.matched
        jobs = walk.jobs
        next = walk.next === undefined ? null : encodeCursor({ s: walk.next })
      }
      const messages: ReadonlyArray<LogMessage> = yield* toLogMessages(kit, rows, jobs)
      const page: MessageLogPage = { messages, next }
      return page
    })
}
