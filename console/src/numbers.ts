import type { Backlog, UsageDay } from "./types.js"

// The console's arithmetic, apart from the DOM so that it is unit-tested (test/console/Numbers.test.ts).

export interface Reading {
  readonly at: number
  readonly backlog: Backlog
}

export interface Rates {
  /** Jobs finished as delivered per second between the last two readings. */
  readonly delivered: number
  /** Jobs that went dead per second. */
  readonly dead: number
  /** New jobs per second (all four counts together grew by this much). */
  readonly created: number
}

const total = (b: Backlog) => b.pending + b.delivering + b.delivered + b.dead

/** Throughput from two successive readings; counts that shrank (retention purged jobs) count as 0. */
export const ratesBetween = (before: Reading, after: Reading): Rates => {
  const seconds = Math.max(0.001, (after.at - before.at) / 1000)
  const per = (a: number, b: number) => Math.max(0, b - a) / seconds
  return {
    delivered: per(before.backlog.delivered, after.backlog.delivered),
    dead: per(before.backlog.dead, after.backlog.dead),
    created: per(total(before.backlog), total(after.backlog))
  }
}

/** A period's counters; `averageLatencyMs` is the daily averages weighted by each day's deliveries. */
export type Totals = Omit<UsageDay, "day">

export const totalsOf = (days: ReadonlyArray<UsageDay>): Totals => {
  let weighted = 0
  let weight = 0
  const sum = (pick: (day: UsageDay) => number) => days.reduce((acc, day) => acc + pick(day), 0)
  for (const day of days) {
    if (day.averageLatencyMs !== null && day.delivered > 0) {
      weighted += day.averageLatencyMs * day.delivered
      weight += day.delivered
    }
  }
  return {
    apiCalls: sum((d) => d.apiCalls),
    messages: sum((d) => d.messages),
    filtered: sum((d) => d.filtered),
    delivered: sum((d) => d.delivered),
    dead: sum((d) => d.dead),
    averageLatencyMs: weight === 0 ? null : weighted / weight
  }
}

/** 1, 2, 5 × 10^n steps: about `count` of them up to `max`. */
export const niceTicks = (max: number, count = 4): Array<number> => {
  if (max <= 0) return [0, 1]
  const rough = max / count
  const power = 10 ** Math.floor(Math.log10(rough))
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power
  const ticks: Array<number> = []
  for (let t = 0; t < max + step; t += step) ticks.push(Math.round(t * 1e6) / 1e6)
  return ticks
}
