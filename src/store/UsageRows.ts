// The usage counters' rows (`usage_daily`): one per source, day and destination, their upserts, and the tally of a
// completion batch into them.
import type { CompleteResult, UsageDelta } from "./Model.js"
import { type CompletionRow, dayMs, num, utcDay } from "./Rows.js"

export type UsageRow = {
  readonly source_id: string
  /** `''` for the source's own counters (calls, messages, filtered); a destination's id for its jobs' (migration 15). */
  readonly destination_id: string
  readonly day: number
  readonly api_calls: number
  readonly messages: number
  readonly filtered: number
  readonly delivered: number
  readonly dead: number
  readonly latency_ms: number
  readonly latency_jobs: number
}

/** The destination id of a source's own usage row (REFERENCE §11: calls and messages are counted before routing). */
export const sourceUsageRow = ""

export const usageRow = (
  sourceId: string,
  now: number,
  delta: UsageDelta,
  destinationId = sourceUsageRow
): UsageRow => ({
  source_id: sourceId,
  destination_id: destinationId,
  day: utcDay(now),
  api_calls: delta.apiCalls ?? 0,
  messages: delta.messages ?? 0,
  filtered: delta.filtered ?? 0,
  delivered: delta.delivered ?? 0,
  dead: delta.dead ?? 0,
  latency_ms: 0,
  latency_jobs: 0
})

export type CompletedRow = {
  id: string
  source_id: string
  destination_id: string
  finished_at: unknown
  created_at: unknown
}

/** The jobs a completion batch applied, and the usage rows (delivered, dead, latency) they add up to. */
export const makeTally = () => {
  const applied: Array<string> = []
  // One accumulator per (day, source, destination), added to in place: a batch has hundreds of rows and a few keys.
  const usage = new Map<string, { -readonly [K in keyof UsageRow]: UsageRow[K] }>()
  const count = (row: CompletedRow, status: string) => {
    applied.push(row.id)
    if (status !== "delivered" && status !== "dead") return
    const finishedAt = num(row.finished_at)
    const day = utcDay(finishedAt)
    const key = `${day}\u0000${row.source_id}\u0000${row.destination_id}`
    let current = usage.get(key)
    if (current === undefined) {
      current = usageRow(row.source_id, day * dayMs, {}, row.destination_id)
      usage.set(key, current)
    }
    if (status === "dead") {
      current.dead += 1
      return
    }
    current.delivered += 1
    // Received = the job's creation (ingest stamps both with one time). Another process's clock may run behind:
    // never a negative latency.
    current.latency_ms += Math.max(0, finishedAt - num(row.created_at))
    current.latency_jobs += 1
  }
  const result = (rows: ReadonlyArray<CompletionRow>): CompleteResult => {
    const appliedSet = new Set(applied)
    return { applied, refused: rows.filter((row) => !appliedSet.has(row.id)).map((row) => row.id) }
  }
  return { applied, usage, count, result }
}

const usageSums = `
    api_calls = usage_daily.api_calls + excluded.api_calls,
    messages = usage_daily.messages + excluded.messages,
    filtered = usage_daily.filtered + excluded.filtered,
    delivered = usage_daily.delivered + excluded.delivered,
    dead = usage_daily.dead + excluded.dead,
    latency_ms = usage_daily.latency_ms + excluded.latency_ms,
    latency_jobs = usage_daily.latency_jobs + excluded.latency_jobs`

/** What a usage upsert adds to an existing (source, day, destination) row. */
export const usageOnConflict = `ON CONFLICT (source_id, day, destination_id) DO UPDATE SET ${usageSums}`

/** PostgreSQL's usage rows are sharded (`usageShards` in `Migrations.ts`): what an upsert adds to its shard's row. */
export const usageOnShardConflict = `ON CONFLICT (source_id, day, destination_id, shard) DO UPDATE SET ${usageSums}`

type UsageKey = { readonly source_id: string; readonly day: number; readonly destination_id: string }

/** The order usage rows are written in (their key's), so that transactions lock them in the same order. */
export const byUsageKey = (a: UsageKey, b: UsageKey) =>
  a.source_id < b.source_id
    ? -1
    : a.source_id > b.source_id
    ? 1
    : a.day !== b.day
    ? a.day - b.day
    : a.destination_id < b.destination_id
    ? -1
    : a.destination_id > b.destination_id
    ? 1
    : 0
