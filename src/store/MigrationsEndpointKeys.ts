import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"

/** The URLs of each destination a source row holds (the `webhooks` column and the `destinations` list), read loosely. */
const endpointsOfRow = (row: { readonly webhooks: string | null; readonly destinations: string | null }) => {
  const urls = (destination: unknown): ReadonlyArray<string> => {
    const endpoints = (destination as { endpoints?: unknown } | null)?.endpoints
    if (!Array.isArray(endpoints)) return []
    return endpoints.flatMap((endpoint: unknown) => {
      const url = (endpoint as { url?: unknown } | null)?.url
      return typeof url === "string" ? [url] : []
    })
  }
  const found: Array<{ readonly destinationId: string; readonly url: string }> = []
  if (row.webhooks !== null) {
    for (const url of urls(JSON.parse(row.webhooks))) found.push({ destinationId: "webhooks", url })
  }
  const others: unknown = row.destinations === null ? [] : JSON.parse(row.destinations)
  for (const destination of Array.isArray(others) ? others : []) {
    const id = (destination as { id?: unknown } | null)?.id
    if (typeof id === "string") { for (const url of urls(destination)) found.push({ destinationId: id, url }) }
  }
  return found
}

/**
 * An endpoint is (source, destination, URL) (REFERENCE §7b): the disabled state is kept by that triple. Each URL
 * disabled before is disabled at every endpoint that has it, with its time and reason; a URL no source has any more
 * is dropped (it receives nothing either way).
 */
export const endpointKeys = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const disabled = yield* sql<{ url: string; disabled_at: number | string; reason: string }>`
    SELECT url, disabled_at, reason FROM disabled_endpoints`
  const sources = disabled.length === 0
    ? []
    : yield* sql<{ id: string; webhooks: string | null; destinations: string | null }>`
      SELECT id, webhooks, destinations FROM sources`
  yield* sql.unsafe(`DROP TABLE disabled_endpoints`)
  yield* sql.unsafe(`CREATE TABLE disabled_endpoints (
    source_id TEXT NOT NULL,
    destination_id TEXT NOT NULL,
    url TEXT NOT NULL,
    disabled_at BIGINT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (source_id, destination_id, url)
  )`)
  const byUrl = new Map(disabled.map((row) => [row.url, row]))
  for (const source of sources) {
    for (const { destinationId, url } of endpointsOfRow(source)) {
      const row = byUrl.get(url)
      if (row === undefined) continue
      yield* sql`
        INSERT INTO disabled_endpoints (source_id, destination_id, url, disabled_at, reason)
        VALUES (${source.id}, ${destinationId}, ${url}, ${Number(row.disabled_at)}, ${row.reason})
        ON CONFLICT DO NOTHING`
    }
  }
})
