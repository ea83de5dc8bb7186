import { useEffect, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatMs, formatNumber, formatTime, Link, StatusBadge } from "../components/ui.js"
import { type Totals, totalsOf } from "../numbers.js"
import type { DestinationView, EndpointHealthView, EndpointWindow } from "../types.js"
import { takeSavedNotice } from "./DestinationEdit.js"
import { describeSubscribe } from "./destinationForm.js"
import { OnceSecret } from "./SigningPanel.js"
import { usageDays } from "./SourceActivity.js"

// A source's destinations on its page (REFERENCE §1a, §7b): each with its settings, its endpoints' health, a secret
// rotation and deletion; the editing is on a page of its own (DestinationEdit).

const destinationPage = (sourceId: string, destinationId: string) =>
  `/sources/${encodeURIComponent(sourceId)}/destinations/${encodeURIComponent(destinationId)}`

/** The destination the source form edits (its `webhooks` object), whose signing panel is the source page's own. */
const webhooksId = "webhooks"

const rate = (window: EndpointWindow) =>
  window.successRate === null ? "—" : `${(window.successRate * 100).toFixed(1)} % of ${window.attempts}`

export const SourceDestinations = (props: { readonly sourceId: string; readonly version: number }) => {
  const { sourceId } = props
  const [notice] = useState(() => takeSavedNotice(sourceId))
  const [destinations, setDestinations] = useState<ReadonlyArray<DestinationView> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [reload, setReload] = useState(0)
  const [removed, setRemoved] = useState<string | undefined>(undefined)

  useEffect(() => {
    let cancelled = false
    api.destinations(sourceId).then(
      (found) => !cancelled && setDestinations(found),
      (failure) => !cancelled && setError(failure)
    )
    return () => {
      cancelled = true
    }
  }, [sourceId, reload, props.version])

  const remove = async (destinationId: string) => {
    const question = `Delete the destination ${destinationId} of ${sourceId}? Its pending jobs become dead letters.`
    if (!window.confirm(question)) return
    setError(undefined)
    try {
      await api.deleteDestination(sourceId, destinationId)
      setRemoved(destinationId)
      setReload((n) => n + 1)
    } catch (failure) {
      setError(failure)
    }
  }

  return (
    <div class="group" role="region" aria-labelledby="destinations-title">
      <div class="page-head">
        <h2 id="destinations-title">Destinations</h2>
        <Link to={`/sources/${encodeURIComponent(sourceId)}/destinations/new`} class="button">Add destination</Link>
      </div>
      <p class="hint">
        Every message goes to each enabled destination it matches, retried there on its own; the webhook destination
        above is the destination <code>webhooks</code>.
      </p>
      {notice !== undefined && <div class="banner banner-ok" role="status">{notice.text}</div>}
      <OnceSecret secret={notice?.generatedSecret} />
      {removed !== undefined && <div class="banner banner-ok" role="status">Destination {removed} deleted.</div>}
      <ErrorBanner error={error} />
      {destinations !== undefined && destinations.length === 0 && <Empty>This source has no destination.</Empty>}
      {destinations?.map((destination) => (
        <DestinationCard
          key={destination.id}
          sourceId={sourceId}
          destination={destination}
          version={reload + props.version}
          onRemove={() => void remove(destination.id)}
          onRotated={() => setReload((n) => n + 1)}
        />
      ))}
    </div>
  )
}

const DestinationCard = (props: {
  readonly sourceId: string
  readonly destination: DestinationView
  readonly version: number
  readonly onRemove: () => void
  readonly onRotated: () => void
}) => {
  const { destination, sourceId } = props
  const [endpoints, setEndpoints] = useState<ReadonlyArray<EndpointHealthView> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [enabled, setEnabled] = useState(0)
  const [usage, setUsage] = useState<Totals | undefined>(undefined)

  useEffect(() => {
    let cancelled = false
    api.endpoints(sourceId, destination.id).then(
      (found) => !cancelled && setEndpoints(found),
      (failure) => !cancelled && setError(failure)
    )
    api.usage(sourceId, usageDays, destination.id).then(
      (found) => !cancelled && setUsage(totalsOf(found.days)),
      (failure) => !cancelled && setError(failure)
    )
    return () => {
      cancelled = true
    }
  }, [sourceId, destination.id, props.version, enabled])

  const enable = (endpoint: EndpointHealthView) =>
    api.enableEndpoint({ sourceId, destinationId: destination.id, url: endpoint.url })
      .then(() => setEnabled((n) => n + 1), setError)

  const titleId = `destination-${destination.id}`
  return (
    <article class="card" aria-labelledby={titleId} data-destination={destination.id}>
      <div class="rule-head">
        <h3 id={titleId}>
          {destination.id}
          {destination.name !== undefined && <span class="muted">: {destination.name}</span>}
        </h3>
        <div class="inline">
          <Link to={destinationPage(sourceId, destination.id)} class="button">Edit destination {destination.id}</Link>
          {access.can("sources:write") && (
            <button type="button" class="danger-text" onClick={props.onRemove}>
              Delete destination {destination.id}
            </button>
          )}
        </div>
      </div>
      <dl class="facts">
        <dt>Enabled</dt>
        <dd>{destination.enabled ? "yes" : "no: nothing is delivered"}</dd>
        <dt>Subscribes to</dt>
        <dd>{describeSubscribe(destination.subscribe)}</dd>
        <dt>Retry window</dt>
        <dd>{destination.retryWindow ?? "4 hours (default)"}</dd>
        <dt>Timeout</dt>
        <dd>{destination.timeout ?? "5 seconds (default)"}</dd>
        <dt>Last {usageDays} days</dt>
        <dd>
          {usage === undefined
            ? "…"
            : `${formatNumber(usage.delivered)} delivered, ${formatNumber(usage.dead)} dead, average latency ${
              formatMs(usage.averageLatencyMs)
            }`}
        </dd>
        <dt>Signing</dt>
        <dd>
          {destination.signing ?? "segment"}
          {destination.hasSharedSecret ? ", shared secret set" : ", no shared secret"}
        </dd>
      </dl>
      <ErrorBanner error={error} />
      <table class="data" aria-label={`Endpoints of ${destination.id}`}>
        <thead>
          <tr>
            <th>URL</th>
            <th>State</th>
            <th>Failures in a row</th>
            <th>Last success</th>
            <th>Last failure</th>
            <th>Last day</th>
            <th>p50 / p99 (day)</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(endpoints ?? destination.endpoints.map((endpoint) => ({ url: endpoint.url }))).map((endpoint) => {
            const health = "state" in endpoint ? endpoint : undefined
            return (
              <tr key={endpoint.url} data-url={endpoint.url}>
                <td class="wrap">{endpoint.url}</td>
                <td>
                  {health === undefined ? "…" : <StatusBadge status={health.state} />}
                  {health?.disabledReason != null && <div class="hint">{health.disabledReason}</div>}
                </td>
                <td>{health?.consecutiveFailures ?? "—"}</td>
                <td>{formatTime(health?.lastSuccessAt)}</td>
                <td>
                  {health?.lastFailure == null
                    ? "—"
                    : `${formatTime(health.lastFailure.at)}: ${health.lastFailure.reason}`}
                </td>
                <td>{health === undefined ? "—" : rate(health.lastDay)}</td>
                <td>
                  {health === undefined
                    ? "—"
                    : `${formatMs(health.lastDay.p50LatencyMs)} / ${formatMs(health.lastDay.p99LatencyMs)}`}
                </td>
                <td>
                  {health?.state === "disabled" && access.can("sources:write") && (
                    <button
                      type="button"
                      onClick={() => void enable(health)}
                    >
                      Enable
                    </button>
                  )}
                </td>
              </tr>
            )
          })}
        </tbody>
      </table>
      {destination.id === webhooksId
        ? <p class="small">Its Standard Webhooks secrets are rotated above, under the source's signing.</p>
        : <Rotation sourceId={sourceId} destination={destination} onRotated={props.onRotated} />}
    </article>
  )
}

/** The destination's Standard Webhooks secrets by prefix, and a rotation whose new secret is shown once. */
const Rotation = (props: {
  readonly sourceId: string
  readonly destination: DestinationView
  readonly onRotated: () => void
}) => {
  const { destination } = props
  const [keepOldFor, setKeepOldFor] = useState("24 hours")
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)

  const rotate = async () => {
    setError(undefined)
    setBusy(true)
    try {
      const rotated = await api.rotateDestinationSecret(props.sourceId, destination.id, keepOldFor)
      setSecret(rotated.secret)
      props.onRotated()
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }

  const secrets = destination.signingSecrets ?? []
  const inputId = `keep-old-for-${destination.id}`
  return (
    <div class="rotation">
      <p class="small">
        Standard Webhooks secrets: {secrets.length === 0
          ? "none yet"
          : secrets.map((item) =>
            `${item.prefix}… (${item.expiresAt === null ? "no expiry" : `expires ${formatTime(item.expiresAt)}`})`
          )
            .join(", ")}
      </p>
      <div class="inline">
        <label for={inputId}>Keep the old secrets of {destination.id} signing for</label>
        <input id={inputId} value={keepOldFor} onInput={(e) => setKeepOldFor(e.currentTarget.value)} />
        {access.can("sources:write") && (
          <button type="button" disabled={busy} onClick={() => void rotate()}>
            Rotate secret of {destination.id}
          </button>
        )}
      </div>
      <ErrorBanner error={error} />
      <OnceSecret secret={secret} />
    </div>
  )
}
