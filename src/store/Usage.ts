import { Array as Arr, Context, DateTime, Effect } from "effect"
import { usageShards } from "./Migrations.js"
import type { UsageDay, UsageDelta } from "./Model.js"
import { dayMs, num, utcDay } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit } from "./StoreKit.js"
import { byUsageKey, usageOnConflict, usageOnShardConflict, type UsageRow, usageRow } from "./UsageRows.js"

export interface UsageShape {
  /** Adds to the source's counters; with `destinationId`, `delivered` and `dead` are that destination's jobs. */
  readonly addUsage: (
    sourceId: string,
    now: number,
    delta: UsageDelta,
    destinationId?: string
  ) => Effect.Effect<void, StoreError>
  /**
   * `days` UTC days ending with the day of `now`, oldest first, zeros included. With `destinationId`, `delivered`,
   * `dead` and the latency are that destination's jobs; the calls and messages stay the source's (REFERENCE §11).
   */
  readonly usage: (
    sourceId: string,
    now: number,
    days: number,
    destinationId?: string
  ) => Effect.Effect<ReadonlyArray<UsageDay>, StoreError>
}

/**
 * Usage counters per source and UTC day, the jobs' per destination too (migration 15): what ingest and completions
 * add, and the days an admin reads.
 */
export class Usage extends Context.Service<Usage, UsageShape>()("hookrelay/store/Usage") {}

const formatDay = (day: number): string => DateTime.formatIsoDateUtc(DateTime.makeUnsafe(day * dayMs))

export const makeWrites = ({ sql }: StoreKit) => {
  // PostgreSQL: each transaction adds to the next of the `usageShards` rows of a (source, day), in turn, so that
  // concurrent commits do not queue for one row's lock (see the migration). Rows in key order: two transactions on
  // one shard lock them in the same order.
  let nextShard = 0
  const takeShard = (): number => {
    const shard = nextShard
    nextShard = (nextShard + 1) % usageShards
    return shard
  }
  const bumpUsage = (rows: ReadonlyArray<UsageRow>) =>
    !Arr.isReadonlyArrayNonEmpty(rows) ? Effect.void : Effect.asVoid(sql.onDialectOrElse({
      pg: () => {
        const shard = takeShard()
        const sharded = Arr.map(Arr.copy(rows).sort(byUsageKey), (row) => ({ ...row, shard }))
        return sql`INSERT INTO usage_daily ${sql.insert(sharded)} ${sql.literal(usageOnShardConflict)}`
      },
      orElse: () => sql`INSERT INTO usage_daily ${sql.insert(rows)} ${sql.literal(usageOnConflict)}`
    }))
  return { takeShard, bumpUsage }
}

export type UsageWriter = ReturnType<typeof makeWrites>

export const make = (kit: StoreKit, writes: UsageWriter): UsageShape => {
  const addUsage = Effect.fn("Store.addUsage")(
    function*(sourceId: string, now: number, delta: UsageDelta, destinationId?: string) {
      yield* writes.bumpUsage([usageRow(sourceId, now, delta, destinationId)])
    },
    fail("addUsage")
  )

  const usage = Effect.fn("Store.usage")(
    function*(sourceId: string, now: number, days: number, destinationId?: string) {
      const last = utcDay(now)
      const first = last - Math.max(1, Math.floor(days)) + 1
      const sql = kit.reads
      // The jobs' counters of every row (the source), or of the destination's rows only.
      const jobs = (column: string) =>
        destinationId === undefined
          ? sql`sum(${sql(column)})`
          : sql`sum(CASE WHEN destination_id = ${destinationId} THEN ${sql(column)} ELSE 0 END)`
      const rows = yield* kit.reads<Record<string, unknown>>`
        SELECT day, sum(api_calls) AS api_calls, sum(messages) AS messages, sum(filtered) AS filtered,
          ${jobs("delivered")} AS delivered, ${jobs("dead")} AS dead, ${jobs("latency_ms")} AS latency_ms,
          ${jobs("latency_jobs")} AS latency_jobs
        FROM usage_daily
        WHERE source_id = ${sourceId} AND day >= ${first} AND day <= ${last}
        GROUP BY day`
      const byDay = new Map(rows.map((row) => [num(row.day), row]))
      const result: Array<UsageDay> = []
      for (let day = first; day <= last; day++) {
        const row = byDay.get(day)
        const latencyJobs = row ? num(row.latency_jobs) : 0
        result.push({
          day: formatDay(day),
          apiCalls: row ? num(row.api_calls) : 0,
          messages: row ? num(row.messages) : 0,
          filtered: row ? num(row.filtered) : 0,
          delivered: row ? num(row.delivered) : 0,
          dead: row ? num(row.dead) : 0,
          averageLatencyMs: row && latencyJobs > 0 ? Math.round(num(row.latency_ms) / latencyJobs) : null
        })
      }
      return result
    },
    fail("usage")
  )

  return { addUsage, usage }
}
