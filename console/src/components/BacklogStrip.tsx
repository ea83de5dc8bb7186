import { useEffect, useState } from "preact/hooks"
import { api } from "../api.js"
import { ratesBetween, type Reading } from "../numbers.js"
import { Sparkline } from "./Chart.js"
import { formatNumber } from "./ui.js"

export const pollMillis = 3000
const keep = 20

const rate = (value: number) => (value >= 10 ? formatNumber(Math.round(value)) : value.toFixed(1))

/** The live strip under the header: the outbox's backlog and throughput, refreshed every few seconds. */
export const BacklogStrip = () => {
  const [readings, setReadings] = useState<ReadonlyArray<Reading>>([])
  const [failed, setFailed] = useState(false)

  useEffect(() => {
    let cancelled = false
    const poll = () => {
      if (document.hidden) return
      api.backlog().then(
        (backlog) => {
          if (cancelled) return
          setFailed(false)
          setReadings((list) => [...list, { at: performance.now(), backlog }].slice(-keep))
        },
        () => {
          if (!cancelled) setFailed(true)
        }
      )
    }
    poll()
    const timer = window.setInterval(poll, pollMillis)
    return () => {
      cancelled = true
      window.clearInterval(timer)
    }
  }, [])

  const last = readings[readings.length - 1]
  const rates = readings.slice(1).map((reading, i) => ratesBetween(readings[i]!, reading))
  const latest = rates[rates.length - 1]

  return (
    <aside class="strip" aria-label="Backlog and throughput">
      {last === undefined
        ? <span class="muted">{failed ? "Backlog unavailable" : "Reading the backlog…"}</span>
        : (
          <>
            <span class="metric" data-metric="pending">
              <span class="metric-name">pending</span> <b>{formatNumber(last.backlog.pending)}</b>
            </span>
            <span class="metric" data-metric="delivering">
              <span class="metric-name">delivering</span> <b>{formatNumber(last.backlog.delivering)}</b>
            </span>
            <span class="metric" data-metric="delivered">
              <span class="metric-name">delivered</span> <b>{formatNumber(last.backlog.delivered)}</b>
            </span>
            <span class="metric" data-metric="dead">
              <span class="metric-name">dead</span>{" "}
              <b class={last.backlog.dead > 0 ? "error-text" : ""}>
                {formatNumber(last.backlog.dead)}
              </b>
            </span>
            <span class="metric" data-metric="throughput">
              <span class="metric-name">delivered/s</span> <b>{latest === undefined ? "…" : rate(latest.delivered)}</b>
              {rates.length >= 2 && (
                <Sparkline values={rates.map((r) => r.delivered)} label="Delivered per second, recent readings" />
              )}
            </span>
            <span class="metric" data-metric="incoming">
              <span class="metric-name">new jobs/s</span> <b>{latest === undefined ? "…" : rate(latest.created)}</b>
            </span>
            <span class="metric muted" data-metric="dead-rate">
              <span class="metric-name">dead/s</span> <b>{latest === undefined ? "…" : rate(latest.dead)}</b>
            </span>
            {failed && <span class="error-text">stale: the last reading failed</span>}
          </>
        )}
    </aside>
  )
}
