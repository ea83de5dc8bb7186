import { useEffect, useState } from "preact/hooks"
import { api, type OpenApiDocument, type OpenApiOperation } from "../api.js"
import { ErrorBanner } from "../components/ui.js"

// The admin API's reference, rendered from its OpenAPI document (/admin/openapi.json, generated from
// the contract): served by the console itself, nothing from elsewhere, no script but the console's.

const refName = (schema: unknown): string | undefined => {
  const ref = (schema as { $ref?: unknown } | undefined)?.$ref
  return typeof ref === "string" ? ref.split("/").at(-1) : undefined
}

const SchemaRef = (props: { readonly schema: unknown }) => {
  const name = refName(props.schema)
  const anyOf = (props.schema as { anyOf?: ReadonlyArray<unknown> } | undefined)?.anyOf
  if (name !== undefined) return <a href={`#schema-${name}`}>{name}</a>
  if (anyOf !== undefined) {
    return (
      <>
        {anyOf.map((item, i) => (
          <span key={i}>
            {i > 0 && " | "}
            <SchemaRef schema={item} />
          </span>
        ))}
      </>
    )
  }
  return <code>{JSON.stringify(props.schema)}</code>
}

const Operation = (props: { readonly method: string; readonly path: string; readonly operation: OpenApiOperation }) => {
  const { operation } = props
  const body = operation.requestBody?.content["application/json"]?.schema
  return (
    <article class="api-op" id={operation.operationId}>
      <h3>
        <span class="api-method mono">{props.method.toUpperCase()}</span> <span class="mono">{props.path}</span>
      </h3>
      {operation.description !== undefined && <p>{operation.description}</p>}
      {(operation.parameters ?? []).length > 0 && (
        <p class="small">
          Parameters: {(operation.parameters ?? []).map((parameter, i) => (
            <span key={parameter.name}>
              {i > 0 && ", "}
              <code>{parameter.name}</code> ({parameter.in}
              {parameter.required === true ? ", required" : ""}
              {parameter.description !== undefined ? `: ${parameter.description}` : ""})
            </span>
          ))}
        </p>
      )}
      {body !== undefined && (
        <p class="small">
          Body: <SchemaRef schema={body} />
        </p>
      )}
      <table class="data small">
        <caption class="visually-hidden">Answers of {operation.operationId}</caption>
        <tbody>
          {Object.entries(operation.responses).map(([status, response]) => (
            <tr key={status}>
              <th scope="row" class="mono">{status}</th>
              <td>{response.description}</td>
              <td>
                {response.content?.["application/json"] !== undefined && (
                  <SchemaRef schema={response.content["application/json"].schema} />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </article>
  )
}

export const ApiReference = () => {
  const [document, setDocument] = useState<OpenApiDocument | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  useEffect(() => {
    api.openApi().then(setDocument, setError)
  }, [])
  const operations = document === undefined ?
    [] :
    Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ path, method, operation }))
    )
  return (
    <section>
      <div class="page-head">
        <h1>Admin API</h1>
        <span class="muted small">
          OpenAPI 3.1: <code>GET /admin/openapi.json</code> with the bearer token
        </span>
      </div>
      <ErrorBanner error={error} />
      {document === undefined && error === undefined && <p class="loading">Loading…</p>}
      {document !== undefined && (
        <>
          <p>{document.info.description}</p>
          {document.tags.map((tag) => (
            <section key={tag.name}>
              <h2>{tag.name}</h2>
              {operations.filter((entry) => entry.operation.tags?.includes(tag.name)).map((entry) => (
                <Operation key={entry.operation.operationId} {...entry} />
              ))}
            </section>
          ))}
          <h2>Schemas</h2>
          {Object.entries(document.components.schemas).map(([name, schema]) => (
            <details key={name} id={`schema-${name}`}>
              <summary class="mono">{name}</summary>
              <pre class="api-schema">{JSON.stringify(schema, null, 2)}</pre>
            </details>
          ))}
        </>
      )}
    </section>
  )
}
