import { Array as Arr, Context, Effect } from "effect"
import type { EndpointKey, EndpointSelector } from "../domain/EndpointKey.js"
import { replayJobs } from "./DeadLetters.js"
import type { DeadLetterFilter, DisabledEndpoint, EndpointLastAttempts, EndpointStats } from "./EndpointRecords.js"
import type { EndpointShareShape } from "./EndpointShare.js"
import * as EndpointSharePg from "./EndpointSharePg.js"
import { idChunk } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit } from "./StoreKit.js"

export interface EndpointsShape {
  readonly disabledEndpoints: () => Effect.Effect<ReadonlyArray<DisabledEndpoint>, StoreError>
  /** Keeps the first disabling when the endpoint already is; true when this call disabled it. */
  readonly disableEndpoint: (endpoint: EndpointKey, at: number, reason: string) => Effect.Effect<boolean, StoreError>
  /** Enables every disabled endpoint the selector takes; the ones it enabled (none: nothing was disabled). */
  readonly enableEndpoints: (selector: EndpointSelector) => Effect.Effect<ReadonlyArray<EndpointKey>, StoreError>
  /** The endpoint's attempts (its URL's, of its source's and destination's jobs) since `since`: counts, latencies. */
  readonly endpointStats: (endpoint: EndpointKey, since: number) => Effect.Effect<EndpointStats, StoreError>
  readonly endpointLastAttempts: (endpoint: EndpointKey) => Effect.Effect<EndpointLastAttempts, StoreError>
  /** Replays every dead letter the filter takes (as `replayDeadLetter`); `dryRun` only counts them. */
  readonly replayDeadLetters: (
    filter: DeadLetterFilter,
    now: number,
    dryRun: boolean
  ) => Effect.Effect<number, StoreError>
  /** Deletes every dead letter the filter takes, with its attempts; `dryRun` only counts them. */
  readonly purgeDeadLettersMatching: (filter: DeadLetterFilter, dryRun: boolean) => Effect.Effect<number, StoreError>
  /**
   * Circuits and rate limits shared by the processes of a deployment: on PostgreSQL only; undefined on SQLite (one
   * process), whose guards keep them in memory.
   */
  readonly share: EndpointShareShape | undefined
}

/** Endpoint records: disabled endpoints, health from attempts, bulk recovery of their dead letters. */
export class Endpoints extends Context.Service<Endpoints, EndpointsShape>()("hookrelay/store/Endpoints") {}

/** Does the job's stored per-URL progress (the dispatcher's JSON, opaque elsewhere) name `url`? */
const namesUrl = (state: string | null, url: string): boolean => {
  if (state === null) return false
  try {
    const parsed: unknown = JSON.parse(state)
    return Array.isArray(parsed) &&
      parsed.some((entry) => typeof entry === "object" && entry !== null && (entry as { url?: unknown }).url === url)
  } catch {
    return false
  }
}

/** Disabled endpoints: list, disable (first disabling kept), enable. */
const makeDisabled = ({ sql }: StoreKit) => {
  const disabledEndpoints = Effect.fn("Store.disabledEndpoints")(
    function*() {
      const rows = yield* sql<
        { source_id: string; destination_id: string; url: string; disabled_at: number | string; reason: string }
      >`
        SELECT source_id, destination_id, url, disabled_at, reason FROM disabled_endpoints
        ORDER BY source_id, destination_id, url`
      return rows.map((row): DisabledEndpoint => ({
        sourceId: row.source_id,
        destinationId: row.destination_id,
        url: row.url,
        disabledAt: Number(row.disabled_at),
        reason: row.reason
      }))
    },
    fail("disabledEndpoints")
  )

  const disableEndpoint = Effect.fn("Store.disableEndpoint")(
    function*(endpoint: EndpointKey, at: number, reason: string) {
      const rows = yield* sql`
        INSERT INTO disabled_endpoints (source_id, destination_id, url, disabled_at, reason)
        VALUES (${endpoint.sourceId}, ${endpoint.destinationId}, ${endpoint.url}, ${at}, ${reason})
        ON CONFLICT (source_id, destination_id, url) DO NOTHING RETURNING url`
      return rows.length > 0
    },
    fail("disableEndpoint")
  )

  const enableEndpoints = Effect.fn("Store.enableEndpoints")(
    function*(selector: EndpointSelector) {
      const conditions = [sql`url = ${selector.url}`]
      if (selector.sourceId !== undefined) conditions.push(sql`source_id = ${selector.sourceId}`)
      if (selector.destinationId !== undefined) conditions.push(sql`destination_id = ${selector.destinationId}`)
      const rows = yield* sql<{ source_id: string; destination_id: string; url: string }>`
        DELETE FROM disabled_endpoints WHERE ${sql.and(conditions)} RETURNING source_id, destination_id, url`
      return rows.map((row): EndpointKey => ({
        sourceId: row.source_id,
        destinationId: row.destination_id,
        url: row.url
      }))
    },
    fail("enableEndpoints")
  )

  return { disabledEndpoints, disableEndpoint, enableEndpoints }
}

/**
 * Endpoint health from the attempts already recorded: counts, latency percentiles, last success and failure. An
 * endpoint's attempts are its URL's (index attempts_url_started) of the jobs of its source and destination (each
 * attempt's job by its key): two sources or destinations posting to one URL are counted apart (REFERENCE §7b).
 */
const makeHealth = ({ reads }: StoreKit) => {
  const ofEndpoint = (endpoint: EndpointKey) =>
    reads`attempts AS a JOIN jobs AS j ON j.id = a.job_id
      WHERE a.url = ${endpoint.url} AND j.source_id = ${endpoint.sourceId} AND j.destination_id = ${endpoint.destinationId}`

  // A percentile by rank: the attempts of the window in latency order.
  const percentile = (endpoint: EndpointKey, since: number, count: number, fraction: number) =>
    Effect.map(
      reads<{ duration_ms: number | string }>`
        SELECT a.duration_ms AS duration_ms FROM ${ofEndpoint(endpoint)} AND a.started_at >= ${since}
        ORDER BY a.duration_ms LIMIT 1 OFFSET ${Math.min(count - 1, Math.floor(count * fraction))}`,
      (rows) => rows.length === 0 ? null : Number(rows[0]!.duration_ms)
    )

  const endpointStats = Effect.fn("Store.endpointStats")(
    function*(endpoint: EndpointKey, since: number) {
      const [row] = yield* reads<{ attempts: number | string; successes: number | string | null }>`
        SELECT count(*) AS attempts, sum(CASE WHEN a.outcome = 'success' THEN 1 ELSE 0 END) AS successes
        FROM ${ofEndpoint(endpoint)} AND a.started_at >= ${since}`
      const attempts = Number(row?.attempts ?? 0)
      const stats: EndpointStats = {
        attempts,
        successes: Number(row?.successes ?? 0),
        p50LatencyMs: attempts === 0 ? null : yield* percentile(endpoint, since, attempts, 0.5),
        p99LatencyMs: attempts === 0 ? null : yield* percentile(endpoint, since, attempts, 0.99)
      }
      return stats
    },
    fail("endpointStats")
  )

  const endpointLastAttempts = Effect.fn("Store.endpointLastAttempts")(
    function*(endpoint: EndpointKey) {
      const success = yield* reads<{ started_at: number | string }>`
        SELECT a.started_at AS started_at FROM ${ofEndpoint(endpoint)} AND a.outcome = 'success'
        ORDER BY a.started_at DESC LIMIT 1`
      const failure = yield* reads<{ started_at: number | string; error: string | null; status_code: number | null }>`
        SELECT a.started_at AS started_at, a.error AS error, a.status_code AS status_code
        FROM ${ofEndpoint(endpoint)} AND a.outcome IN ('retryable', 'permanent')
        ORDER BY a.started_at DESC LIMIT 1`
      const last = failure[0]
      const answer: EndpointLastAttempts = {
        lastSuccessAt: success.length === 0 ? null : Number(success[0]!.started_at),
        lastFailureAt: last === undefined ? null : Number(last.started_at),
        lastFailure: last === undefined
          ? null
          : last.error ?? (last.status_code === null ? null : `HTTP ${last.status_code}`)
      }
      return answer
    },
    fail("endpointLastAttempts")
  )

  return { endpointStats, endpointLastAttempts }
}

/** Bulk recovery of an endpoint's dead letters: replay or purge every one a filter takes. */
const makeRecovery = ({ sql }: StoreKit) => {
  /** The ids of the dead letters that match, oldest death first. */
  const matching = (filter: DeadLetterFilter) =>
    Effect.gen(function*() {
      const conditions = [sql`status = 'dead'`, sql`source_id = ${filter.sourceId}`]
      if (filter.since !== undefined) conditions.push(sql`finished_at >= ${filter.since}`)
      if (filter.until !== undefined) conditions.push(sql`finished_at < ${filter.until}`)
      if (filter.destinationIds !== undefined) {
        if (filter.destinationIds.length === 0) return []
        conditions.push(sql`${sql.in("destination_id", filter.destinationIds)}`)
      }
      const rows = yield* sql<{ id: string; endpoint_state: string | null }>`
        SELECT id, endpoint_state FROM jobs WHERE ${sql.and(conditions)} ORDER BY finished_at, id`
      const url = filter.url
      return url === undefined
        ? rows.map((row) => row.id)
        : rows.filter((row) => namesUrl(row.endpoint_state, url)).map((row) => row.id)
    })

  const replayDeadLetters = Effect.fn("Store.replayDeadLetters")(
    function*(filter: DeadLetterFilter, now: number, dryRun: boolean) {
      const ids = yield* matching(filter)
      if (dryRun) return ids.length
      return yield* replayJobs(sql, ids, now)
    },
    fail("replayDeadLetters")
  )

  const purgeDeadLettersMatching = Effect.fn("Store.purgeDeadLettersMatching")(
    function*(filter: DeadLetterFilter, dryRun: boolean) {
      const ids = yield* matching(filter)
      if (dryRun) return ids.length
      let purged = 0
      for (const chunk of Arr.chunksOf(ids, idChunk)) {
        purged += yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM attempts WHERE ${sql.in("job_id", chunk)}`
          const rows = yield* sql<{ id: string }>`
            DELETE FROM jobs WHERE ${sql.in("id", chunk)} AND status = 'dead' RETURNING id`
          return rows.length
        }))
      }
      return purged
    },
    fail("purgeDeadLettersMatching")
  )

  return { replayDeadLetters, purgeDeadLettersMatching }
}

/** Endpoint health from the attempts already recorded, disabled URLs, and bulk recovery of dead letters. */
export const make = (kit: StoreKit): EndpointsShape => ({
  ...makeDisabled(kit),
  ...makeHealth(kit),
  ...makeRecovery(kit),
  share: kit.sql.onDialectOrElse({ pg: () => EndpointSharePg.make(kit.sql), orElse: () => undefined })
})
