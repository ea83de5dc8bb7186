import { useEffect, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatMs, formatTime, StatusBadge } from "../components/ui.js"
import type { Location } from "../router.js"
import { navigate } from "../router.js"
import type { EndpointHealthView, EndpointWindow, SourceView } from "../types.js"

const rate = (window: EndpointWindow) =>
  window.successRate === null ? "—" : `${(window.successRate * 100).toFixed(1)} % of ${window.attempts}`

/** A source's endpoints (each destination's URLs) with their health, an enable button for disabled ones, and bulk recovery of dead letters. */
export const Endpoints = (props: { readonly location: Location }) => {
  const sourceId = props.location.query.get("sourceId") ?? ""
  const [sources, setSources] = useState<ReadonlyArray<SourceView> | undefined>(undefined)
  const [endpoints, setEndpoints] = useState<ReadonlyArray<EndpointHealthView> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [reload, setReload] = useState(0)

  useEffect(() => {
    api.sources().then(setSources, setError)
  }, [])

  useEffect(() => {
    if (sourceId === "" && sources !== undefined && sources.length > 0) {
      navigate(`/endpoints?sourceId=${encodeURIComponent(sources[0]!.id)}`, { replace: true })
    }
  }, [sourceId, sources])

  useEffect(() => {
    if (sourceId === "") return
    let cancelled = false
    setError(undefined)
    api.endpoints(sourceId).then(
      (found) => !cancelled && setEndpoints(found),
      (failure) => !cancelled && setError(failure)
    )
    return () => {
      cancelled = true
    }
  }, [sourceId, reload])

  // The endpoint alone, (source, destination, URL): another destination or source with that URL stays as it is.
  const enable = (endpoint: EndpointHealthView) =>
    api.enableEndpoint({ sourceId: endpoint.sourceId, destinationId: endpoint.destinationId, url: endpoint.url })
      .then(() => setReload((n) => n + 1), setError)

  return (
    <section>
      <div class="page-head">
        <h1>Endpoints</h1>
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label for="endpoints-source">Source</label>
          <select
            id="endpoints-source"
            value={sourceId}
            onChange={(e) => navigate(`/endpoints?sourceId=${encodeURIComponent(e.currentTarget.value)}`)}
          >
            {sources?.map((s) => <option key={s.id} value={s.id}>{s.id}</option>)}
          </select>
        </form>
      </div>
      <ErrorBanner error={error} />
      {sources !== undefined && sources.length === 0 && <Empty>No sources yet.</Empty>}
      {endpoints !== undefined && endpoints.length === 0 && <Empty>This source has no webhook URL.</Empty>}
      {endpoints !== undefined && endpoints.length > 0 && (
        <table aria-label="Endpoint health">
          <thead>
            <tr>
              <th>Destination</th>
              <th>URL</th>
              <th>State</th>
              <th>Failures in a row</th>
              <th>Last success</th>
              <th>Last failure</th>
              <th>Last hour</th>
              <th>Last day</th>
              <th>p50 / p99 (day)</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {endpoints.map((endpoint) => (
              <tr
                key={`${endpoint.destinationId} ${endpoint.url}`}
                data-url={endpoint.url}
                data-destination={endpoint.destinationId}
              >
                <td>{endpoint.destinationId}</td>
                <td>{endpoint.url}</td>
                <td>
                  <StatusBadge status={endpoint.state} />
                  {endpoint.disabledReason !== null && <div class="hint">{endpoint.disabledReason}</div>}
                </td>
                <td>{endpoint.consecutiveFailures}</td>
                <td>{formatTime(endpoint.lastSuccessAt)}</td>
                <td>
                  {endpoint.lastFailure === null
                    ? "—"
                    : `${formatTime(endpoint.lastFailure.at)}: ${endpoint.lastFailure.reason}`}
                </td>
                <td>{rate(endpoint.lastHour)}</td>
                <td>{rate(endpoint.lastDay)}</td>
                <td>{formatMs(endpoint.lastDay.p50LatencyMs)} / {formatMs(endpoint.lastDay.p99LatencyMs)}</td>
                <td>
                  {endpoint.state === "disabled" && access.can("sources:write") && (
                    <button
                      type="button"
                      onClick={() => void enable(endpoint)}
                    >
                      Enable
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {sourceId !== "" && access.can("replay") && (
        <Recovery
          sourceId={sourceId}
          urls={[...new Set(endpoints?.map((e) => e.url) ?? [])]}
        />
      )}
    </section>
  )
}

/** Replays or purges a source's dead letters by URL and time range; a dry run shows the count first. */
const Recovery = (props: { readonly sourceId: string; readonly urls: ReadonlyArray<string> }) => {
  const [url, setUrl] = useState("")
  const [since, setSince] = useState("")
  const [until, setUntil] = useState("")
  const [result, setResult] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)

  const run = (action: "replay" | "purge", dryRun: boolean) => {
    setError(undefined)
    const filter = {
      sourceId: props.sourceId,
      ...(url !== "" && { url }),
      ...(since !== "" && { since: new Date(since).toISOString() }),
      ...(until !== "" && { until: new Date(until).toISOString() }),
      dryRun
    }
    api.recover(action, filter).then(
      (answer) =>
        setResult(
          dryRun
            ? `${answer.count} dead letters match.`
            : `${answer.count} dead letters ${action === "replay" ? "replayed" : "purged"}.`
        ),
      setError
    )
  }

  return (
    <form class="recovery" aria-label="Bulk recovery" onSubmit={(e) => e.preventDefault()}>
      <h2>Dead letters of {props.sourceId}</h2>
      <label for="recovery-url">URL</label>
      <select id="recovery-url" value={url} onChange={(e) => setUrl(e.currentTarget.value)}>
        <option value="">any</option>
        {props.urls.map((u) => <option key={u} value={u}>{u}</option>)}
      </select>
      <label for="recovery-since">Dead since</label>
      <input id="recovery-since" type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
      <label for="recovery-until">until</label>
      <input id="recovery-until" type="datetime-local" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
      <button type="button" onClick={() => run("replay", true)}>Count</button>
      <button type="button" onClick={() => run("replay", false)}>Replay</button>
      <button type="button" onClick={() => run("purge", false)}>Purge</button>
      <ErrorBanner error={error} />
      {result !== undefined && <p role="status">{result}</p>}
    </form>
  )
}
