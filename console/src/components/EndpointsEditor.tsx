import type { JSX } from "preact"
import type { EndpointRow, HeaderRow } from "../pages/sourceForm.js"
import { emptyEndpoint, emptyHeader, maxEndpoints, removeAt, replaceAt } from "../pages/sourceForm.js"

/** A DOM id from a form path such as `webhooks.filters[0].if.type`. */
export const domId = (path: string) => `f-${path.replace(/[^A-Za-z0-9_-]/g, "_")}`

/** How a form shows the issues placed at its paths (`placeIssues`): the state of one input and its messages. */
export interface FieldMarks {
  readonly invalid: (path: string) => boolean
  readonly described: (path: string) => string | undefined
  readonly errorsOf: (path: string) => JSX.Element
}

/**
 * A destination's 1 to 5 URLs with their static headers. `at` is where the list is in the admin API's
 * body (`webhooks.endpoints`, `endpoints`): the server's issues name it, and the inputs' ids follow it.
 */
export const EndpointsEditor = (props: {
  readonly at: string
  readonly endpoints: ReadonlyArray<EndpointRow>
  readonly marks: FieldMarks
  readonly onChange: (f: (endpoints: ReadonlyArray<EndpointRow>) => ReadonlyArray<EndpointRow>) => void
}) => {
  const { at, endpoints, marks, onChange } = props
  const { described, errorsOf, invalid } = marks
  const titleId = `${domId(at)}-title`
  const updateEndpoint = (e: number, f: (endpoint: EndpointRow) => EndpointRow) =>
    onChange((list) => replaceAt(list, e, f))
  const updateHeader = (e: number, h: number, f: (header: HeaderRow) => HeaderRow) =>
    updateEndpoint(e, (endpoint) => ({ ...endpoint, headers: replaceAt(endpoint.headers, h, f) }))
  return (
    <div class="group" aria-labelledby={titleId} role="group">
      <h2 id={titleId}>Endpoints ({endpoints.length} of at most {maxEndpoints})</h2>
      {errorsOf(at)}
      {endpoints.map((endpoint, e) => {
        const path = `${at}[${e}]`
        return (
          <div class="card endpoint" key={endpoint.key} role="group" aria-label={`Endpoint ${e + 1}`}>
            <div class="field">
              <label for={domId(`${path}.url`)}>Endpoint {e + 1} URL</label>
              <div class="inline">
                <input
                  id={domId(`${path}.url`)}
                  type="url"
                  class="mono grow"
                  value={endpoint.url}
                  placeholder="https://example.com/hooks/analytics"
                  spellcheck={false}
                  aria-invalid={invalid(`${path}.url`)}
                  aria-describedby={described(`${path}.url`)}
                  onInput={(ev) => {
                    const url = ev.currentTarget.value
                    updateEndpoint(e, (x) => ({ ...x, url }))
                  }}
                />
                <button
                  type="button"
                  class="danger-text"
                  disabled={endpoints.length <= 1}
                  onClick={() => onChange((list) => removeAt(list, e))}
                >
                  Remove endpoint {e + 1}
                </button>
              </div>
              {errorsOf(`${path}.url`)}
              {errorsOf(path)}
            </div>
            <div class="headers">
              <span class="label">Static headers</span>
              {errorsOf(`${path}.headers`)}
              {endpoint.headers.map((header, h) => {
                const headerPath = `${path}.headers.${header.name}`
                const id = domId(`${path}.headers[${h}]`)
                return (
                  <div key={header.key}>
                    <div class="inline">
                      <label for={`${id}-name`} class="visually-hidden">
                        Endpoint {e + 1} header {h + 1} name
                      </label>
                      <input
                        id={`${id}-name`}
                        class="mono"
                        placeholder="Header-Name"
                        value={header.name}
                        spellcheck={false}
                        aria-invalid={invalid(headerPath) && header.name !== ""}
                        onInput={(ev) => {
                          const name = ev.currentTarget.value
                          updateHeader(e, h, (x) => ({ ...x, name }))
                        }}
                      />
                      <label for={`${id}-value`} class="visually-hidden">
                        Endpoint {e + 1} header {h + 1} value
                      </label>
                      <input
                        id={`${id}-value`}
                        class="mono grow"
                        placeholder={header.masked === undefined ? "value" : `current: ${header.masked}`}
                        value={header.value}
                        spellcheck={false}
                        aria-invalid={invalid(headerPath) && header.name !== ""}
                        onInput={(ev) => {
                          const value = ev.currentTarget.value
                          updateHeader(e, h, (x) => ({ ...x, value }))
                        }}
                      />
                      <button
                        type="button"
                        class="danger-text"
                        onClick={() => updateEndpoint(e, (x) => ({ ...x, headers: removeAt(x.headers, h) }))}
                      >
                        Remove header
                      </button>
                    </div>
                    {header.name !== "" && errorsOf(headerPath)}
                  </div>
                )
              })}
              <button
                type="button"
                onClick={() => updateEndpoint(e, (x) => ({ ...x, headers: [...x.headers, emptyHeader()] }))}
              >
                Add header to endpoint {e + 1}
              </button>
            </div>
          </div>
        )
      })}
      <button
        type="button"
        disabled={endpoints.length >= maxEndpoints}
        onClick={() => onChange((list) => [...list, emptyEndpoint()])}
      >
        Add endpoint
      </button>
    </div>
  )
}
