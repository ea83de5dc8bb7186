/**
 * One client of the outage benchmark (bench/client/outage.ts), in a process of its own on plain node: hookrelay's
 * `createClient` or `@segment/analytics-node`, each with its defaults, making `track` calls (not awaited, as a web
 * service makes them) at a fixed rate from the parent's "go", then closing with its default close. Samples its own
 * RSS every 5 ms and reports to the parent over IPC.
 *
 *   node outageClient.js <hookrelay|analytics-node> <endpoint> <calls per second> <calls>
 */
import { trackParams } from "./childProcesses.js"

export type OutageClientKind = "hookrelay" | "analytics-node"

/** What a client process reports when it has closed. Times are epoch milliseconds (the parent's clock too). */
export interface OutageClientReport {
  readonly made: number
  readonly baselineRssBytes: number
  readonly peakRssBytes: number
  /** When close (`close()`, `closeAndFlush()`) resolved, and how long it took. */
  readonly closedAt: number
  readonly closeMillis: number
  /** Messages whose delivery the client reported, and the time of the last such report. */
  readonly acknowledged: number
  readonly lastAcknowledgedAt: number | undefined
  /** Acknowledgements per 100 ms since "go", as [start of the 100 ms in ms, count], those with any. */
  readonly acknowledgedAt: ReadonlyArray<readonly [number, number]>
  /** When "go" was sent: the origin of `acknowledgedAt`. */
  readonly goAt: number
  /** Messages the client reported as failed, dropped or refused, by kind. */
  readonly lost: Record<string, number>
  /**
   * hookrelay only: when `Reachable` was heard, and the first 5 ms sample after it with `stats().held === 0` (or the
   * end of close, if the queue first emptied with the last outcome).
   */
  readonly reachableAt: number | undefined
  readonly emptyAt: number | undefined
  readonly statuses: ReadonlyArray<string>
}

interface Sender {
  readonly track: (i: number) => void
  readonly close: () => Promise<void>
  /** Messages queued or being sent (hookrelay only). */
  readonly held: () => number | undefined
}

const run = async (kind: OutageClientKind, endpoint: string, rate: number, calls: number) => {
  let acknowledged = 0
  let lastAcknowledgedAt: number | undefined
  const acknowledgedAt = new Map<number, number>()
  const lost: Record<string, number> = {}
  const statuses: Array<string> = []
  let reachableAt: number | undefined
  let emptyAt: number | undefined
  let go = 0
  const acknowledge = (count: number) => {
    const now = Date.now()
    acknowledged += count
    lastAcknowledgedAt = now
    const slot = Math.floor((now - go) / 100) * 100
    acknowledgedAt.set(slot, (acknowledgedAt.get(slot) ?? 0) + count)
  }
  const lose = (why: string, count: number) => (lost[why] = (lost[why] ?? 0) + count)

  const sender: Sender = await (async () => {
    if (kind === "hookrelay") {
      const { createClient } = await import("../../src/client/index.js")
      const client = createClient({
        writeKey: "bench",
        endpoint,
        onOutcome: (outcome) => {
          if (outcome._tag === "Success") acknowledge(outcome.messages.length)
          else if (outcome._tag === "Failure") lose(`Failure ${outcome.reason}`, outcome.messages.length)
          else lose(outcome._tag, 1)
        },
        // Only observed: a status changes nothing about the client's behaviour.
        onStatus: (status) => {
          const held = status._tag === "Reachable" ? ` (${status.held} held, down ${status.downtimeMillis} ms)` : ""
          statuses.push(`${status._tag} at +${Date.now() - go} ms${held}`)
          if (status._tag === "Reachable") reachableAt ??= Date.now()
        }
      })
      return {
        track: (i) => void client.track(trackParams(i, `outage-${i}`)),
        close: () => client.close(),
        held: () => client.stats().held
      }
    }
    const { Analytics } = await import("@segment/analytics-node")
    const client = new Analytics({ writeKey: "bench", host: endpoint })
    return {
      // The callback reports each message's delivery, or its failure once analytics-node gives up on it.
      track: (i) =>
        client.track(
          trackParams(i, `outage-${i}`),
          (error) => (error === undefined ? acknowledge(1) : lose("delivery_failure", 1))
        ),
      close: () => client.closeAndFlush(),
      held: () => undefined
    }
  })()

  const baselineRssBytes = process.memoryUsage.rss()
  let peak = baselineRssBytes
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss())
    if (reachableAt !== undefined && emptyAt === undefined && sender.held() === 0) emptyAt = Date.now()
  }, 5)

  process.send!({ type: "ready" })
  await new Promise<void>((resolve) => process.once("message", () => resolve()))
  go = Date.now()
  let made = 0
  // Every 10 ms, the calls due by now: the rate holds whatever the timers' drift.
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const due = Math.min(calls, Math.floor(((Date.now() - go) * rate) / 1000))
      for (; made < due; made++) sender.track(made)
      if (made === calls) {
        clearInterval(timer)
        resolve()
      }
    }, 10)
  })
  const closing = Date.now()
  await sender.close()
  const closedAt = Date.now()
  clearInterval(sampler)
  // The queue empties for good with the last outcome, which resolves close in the same turn: no sample in between.
  if (reachableAt !== undefined && emptyAt === undefined && sender.held() === 0) emptyAt = closedAt
  const report: OutageClientReport = {
    made,
    baselineRssBytes,
    peakRssBytes: Math.max(peak, process.memoryUsage.rss()),
    closedAt,
    closeMillis: closedAt - closing,
    acknowledged,
    lastAcknowledgedAt,
    acknowledgedAt: [...acknowledgedAt],
    goAt: go,
    lost,
    reachableAt,
    emptyAt,
    statuses
  }
  process.send!({ type: "done", report }, () => process.exit(0))
}

const [kind, endpoint, rate, calls] = process.argv.slice(2)
run(kind as OutageClientKind, endpoint!, Number(rate), Number(calls)).catch((error) => {
  console.error(error)
  process.exit(1)
})
