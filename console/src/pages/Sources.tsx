import { useEffect, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatTime, Link } from "../components/ui.js"
import type { SourceView } from "../types.js"

export const Sources = () => {
  const [sources, setSources] = useState<ReadonlyArray<SourceView> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)

  useEffect(() => {
    api.sources().then(setSources, setError)
  }, [])

  return (
    <section>
      <div class="page-head">
        <h1>Sources</h1>
        {access.can("sources:write") && <Link to="/sources/new" class="button primary">Add source</Link>}
      </div>
      <ErrorBanner error={error} />
      {sources === undefined && error === undefined && <p class="loading">Loading…</p>}
      {sources !== undefined && sources.length === 0 && (
        <Empty>No sources yet. Add one to give a site or app its write key.</Empty>
      )}
      {sources !== undefined && sources.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">Sources</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col">Write key</th>
              <th scope="col">Webhooks</th>
              <th scope="col">Endpoints</th>
              <th scope="col">Signed</th>
              <th scope="col">Filters</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span class="visually-hidden">Links</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sources.map((source) => {
              const webhooks = source.webhooks
              const id = encodeURIComponent(source.id)
              return (
                <tr key={source.id}>
                  <th scope="row">
                    <Link to={`/sources/${id}`}>{source.id}</Link>
                  </th>
                  <td class="mono">{source.writeKey}</td>
                  <td>
                    {webhooks === undefined
                      ? <span class="muted">none</span>
                      : webhooks.enabled
                      ? <span class="badge badge-delivered">enabled</span>
                      : <span class="badge badge-dead">disabled</span>}
                  </td>
                  <td>
                    {webhooks === undefined ? "—" : (
                      <ul class="plain">
                        {webhooks.endpoints.map((endpoint, i) => (
                          <li key={i} class="mono">
                            {endpoint.url}
                            {endpoint.headers !== undefined && Object.keys(endpoint.headers).length > 0 && (
                              <span class="muted">
                                {" "}+ {Object.keys(endpoint.headers).length} header
                                {Object.keys(endpoint.headers).length === 1 ? "" : "s"}
                              </span>
                            )}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td>{webhooks === undefined ? "—" : webhooks.hasSharedSecret ? "yes" : "no"}</td>
                  <td>{webhooks?.filters?.length ?? 0}</td>
                  <td>{formatTime(source.updatedAt)}</td>
                  <td class="links">
                    <Link to={`/sources/${id}`}>Edit</Link> <Link to={`/usage?sourceId=${id}`}>Usage</Link>{" "}
                    <Link to={`/messages?sourceId=${id}`}>Messages</Link>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </section>
  )
}
