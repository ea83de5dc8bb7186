import { useEffect, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatMs, formatNumber, formatTime, Link } from "../components/ui.js"
import { totalsOf } from "../numbers.js"
import type { JobView, Usage } from "../types.js"

// A source's recent dead letters and its usage of the last days, on its page (REFERENCE §7, §11); the message log,
// the usage and the endpoints pages have the rest.

export const usageDays = 7
const deadLetterLimit = 20

export const SourceActivity = (props: { readonly sourceId: string; readonly version: number }) => {
  const { sourceId } = props
  const [deadLetters, setDeadLetters] = useState<ReadonlyArray<JobView> | undefined>(undefined)
  const [usage, setUsage] = useState<Usage | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [reload, setReload] = useState(0)

  useEffect(() => {
    let cancelled = false
    api.deadLetters(sourceId, deadLetterLimit).then(
      (found) => !cancelled && setDeadLetters(found),
      (failure) => !cancelled && setError(failure)
    )
    api.usage(sourceId, usageDays).then(
      (found) => !cancelled && setUsage(found),
      (failure) => !cancelled && setError(failure)
    )
    return () => {
      cancelled = true
    }
  }, [sourceId, reload, props.version])

  const replay = (jobId: string) => api.replay(jobId).then(() => setReload((n) => n + 1), setError)
  const totals = usage === undefined ? undefined : totalsOf(usage.days)
  const query = `sourceId=${encodeURIComponent(sourceId)}`

  return (
    <>
      <div class="group" role="region" aria-labelledby="dead-letters-title">
        <h2 id="dead-letters-title">Dead letters</h2>
        <ErrorBanner error={error} />
        {deadLetters !== undefined && deadLetters.length === 0 && <Empty>No dead letters.</Empty>}
        {deadLetters !== undefined && deadLetters.length > 0 && (
          <table class="data" aria-label={`Dead letters of ${sourceId}`}>
            <thead>
              <tr>
                <th>Message</th>
                <th>Destination</th>
                <th>Kind</th>
                <th>Attempts</th>
                <th>Dead since</th>
                <th>Last error</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {deadLetters.map((job) => (
                <tr key={job.id} data-destination={job.destinationId}>
                  <td class="mono">{job.messageId}</td>
                  <td>{job.destinationId}</td>
                  <td>{job.kind}</td>
                  <td class="num">{job.attemptCount}</td>
                  <td>{formatTime(job.finishedAt)}</td>
                  <td>{job.lastError ?? "—"}</td>
                  <td>
                    {access.can("replay") && (
                      <button
                        type="button"
                        onClick={() => void replay(job.id)}
                      >
                        Replay {job.messageId}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <p class="small">
          The latest {deadLetterLimit}; <Link to={`/endpoints?${query}`}>bulk replay and purge</Link> by URL and time.
        </p>
      </div>
      <div class="group" role="region" aria-labelledby="source-usage-title">
        <h2 id="source-usage-title">Usage, last {usageDays} days</h2>
        {totals !== undefined && (
          <dl class="facts">
            <dt>API calls</dt>
            <dd>{formatNumber(totals.apiCalls)}</dd>
            <dt>messages</dt>
            <dd>{formatNumber(totals.messages)}</dd>
            <dt>filtered</dt>
            <dd>{formatNumber(totals.filtered)}</dd>
            <dt>delivered</dt>
            <dd>{formatNumber(totals.delivered)}</dd>
            <dt>dead</dt>
            <dd>{formatNumber(totals.dead)}</dd>
            <dt>average latency</dt>
            <dd>{formatMs(totals.averageLatencyMs)}</dd>
          </dl>
        )}
        <p class="small">
          Jobs are counted per destination: a message delivered to three destinations counts three.{" "}
          <Link to={`/usage?${query}`}>Daily charts</Link>.
        </p>
      </div>
    </>
  )
}
