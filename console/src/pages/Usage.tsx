import { useEffect, useState } from "preact/hooks"
import { api } from "../api.js"
import { DayChart } from "../components/Chart.js"
import { Empty, ErrorBanner, formatMs, formatNumber } from "../components/ui.js"
import { totalsOf } from "../numbers.js"
import type { Location } from "../router.js"
import { navigate } from "../router.js"
import type { SourceView, Usage as UsageData } from "../types.js"

const dayChoices = [7, 14, 30, 90]

export const Usage = (props: { readonly location: Location }) => {
  const sourceId = props.location.query.get("sourceId") ?? ""
  const daysParam = Number(props.location.query.get("days") ?? "30")
  const days = dayChoices.includes(daysParam) ? daysParam : 30
  const [sources, setSources] = useState<ReadonlyArray<SourceView> | undefined>(undefined)
  const [usage, setUsage] = useState<UsageData | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)

  useEffect(() => {
    api.sources().then(setSources, setError)
  }, [])

  // Without a chosen source, the first one is shown.
  useEffect(() => {
    if (sourceId === "" && sources !== undefined && sources.length > 0) {
      navigate(`/usage?sourceId=${encodeURIComponent(sources[0]!.id)}&days=${days}`, { replace: true })
    }
  }, [sourceId, sources, days])

  useEffect(() => {
    if (sourceId === "") return
    let cancelled = false
    setError(undefined)
    setUsage(undefined)
    api.usage(sourceId, days).then(
      (found) => {
        if (!cancelled) setUsage(found)
      },
      (failure) => {
        if (!cancelled) setError(failure)
      }
    )
    return () => {
      cancelled = true
    }
  }, [sourceId, days])

  const choose = (nextSource: string, nextDays: number) =>
    navigate(`/usage?sourceId=${encodeURIComponent(nextSource)}&days=${nextDays}`)

  const totals = usage === undefined ? undefined : totalsOf(usage.days)
  const dayNames = usage?.days.map((d) => d.day) ?? []

  return (
    <section>
      <div class="page-head">
        <h1>Usage</h1>
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label for="usage-source">Source</label>
          <select id="usage-source" value={sourceId} onChange={(e) => choose(e.currentTarget.value, days)}>
            {sources?.map((s) => <option key={s.id} value={s.id}>{s.id}</option>)}
          </select>
          <label for="usage-days">Period</label>
          <select
            id="usage-days"
            value={String(days)}
            onChange={(e) => choose(sourceId, Number(e.currentTarget.value))}
          >
            {dayChoices.map((n) => <option key={n} value={String(n)}>last {n} days</option>)}
          </select>
        </form>
      </div>
      <ErrorBanner error={error} />
      {sources !== undefined && sources.length === 0 && <Empty>No sources yet.</Empty>}
      {usage === undefined && sourceId !== "" && error === undefined && <p class="loading">Loading…</p>}
      {usage !== undefined && totals !== undefined && (
        <>
          <dl class="totals" aria-label={`Totals over the last ${days} days (UTC)`}>
            <div>
              <dt>API calls</dt>
              <dd data-total="apiCalls">{formatNumber(totals.apiCalls)}</dd>
            </div>
            <div>
              <dt>Messages</dt>
              <dd data-total="messages">{formatNumber(totals.messages)}</dd>
            </div>
            <div>
              <dt>Filtered</dt>
              <dd data-total="filtered">{formatNumber(totals.filtered)}</dd>
            </div>
            <div>
              <dt>Delivered</dt>
              <dd data-total="delivered">{formatNumber(totals.delivered)}</dd>
            </div>
            <div>
              <dt>Dead</dt>
              <dd data-total="dead">{formatNumber(totals.dead)}</dd>
            </div>
            <div>
              <dt>Avg. latency</dt>
              <dd data-total="averageLatencyMs">{formatMs(totals.averageLatencyMs)}</dd>
            </div>
          </dl>
          <DayChart
            title="Messages per day"
            kind="bars"
            days={dayNames}
            format={formatNumber}
            series={[
              { name: "messages", className: "s-messages", values: usage.days.map((d) => d.messages) },
              { name: "filtered", className: "s-filtered", values: usage.days.map((d) => d.filtered) },
              { name: "delivered", className: "s-delivered", values: usage.days.map((d) => d.delivered) },
              { name: "dead", className: "s-dead", values: usage.days.map((d) => d.dead) }
            ]}
          />
          <DayChart
            title="Average delivery latency per day"
            kind="lines"
            height={180}
            days={dayNames}
            format={(v) => `${formatNumber(v)} ms`}
            series={[{
              name: "average latency",
              className: "s-latency",
              values: usage.days.map((d) => d.averageLatencyMs)
            }]}
          />
          <details class="day-table">
            <summary>Numbers per day</summary>
            <table class="data">
              <caption class="visually-hidden">Usage per UTC day</caption>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  <th scope="col" class="num">API calls</th>
                  <th scope="col" class="num">Messages</th>
                  <th scope="col" class="num">Filtered</th>
                  <th scope="col" class="num">Delivered</th>
                  <th scope="col" class="num">Dead</th>
                  <th scope="col" class="num">Avg. latency</th>
                </tr>
              </thead>
              <tbody>
                {[...usage.days].reverse().map((d) => (
                  <tr key={d.day}>
                    <th scope="row">{d.day}</th>
                    <td class="num">{formatNumber(d.apiCalls)}</td>
                    <td class="num">{formatNumber(d.messages)}</td>
                    <td class="num">{formatNumber(d.filtered)}</td>
                    <td class="num">{formatNumber(d.delivered)}</td>
                    <td class="num">{formatNumber(d.dead)}</td>
                    <td class="num">{formatMs(d.averageLatencyMs)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        </>
      )}
    </section>
  )
}
