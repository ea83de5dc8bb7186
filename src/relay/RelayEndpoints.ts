import { Clock, Effect, Option } from "effect"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import type { GuardSnapshot } from "../delivery/EndpointGuard.js"
import type { EndpointGuardsShape } from "../delivery/EndpointGuards.js"
import { UnknownDestination } from "../domain/DestinationErrors.js"
import { destinationById, endpointsOf } from "../domain/Destinations.js"
import { type EndpointKey, endpointKeyString, type EndpointSelector, selects } from "../domain/EndpointKey.js"
import type { UnknownSource } from "../domain/IngestErrors.js"
import type { FieldIssue } from "../domain/Issues.js"
import type { EndpointsShape } from "../store/Endpoints.js"
import type { EndpointStats, StoredSource } from "../store/Model.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { StoreError } from "../store/StoreError.js"

/**
 * - `healthy`: the last attempt succeeded (or none was made);
 * - `failing`: failures since the last success, the circuit still closed;
 * - `paused`: the circuit is open: jobs are held, one probe at a time;
 * - `disabled`: the URL receives nothing until enabled again.
 */
export type EndpointState = "healthy" | "failing" | "paused" | "disabled"

export interface EndpointWindow {
  readonly attempts: number
  /** Successes / attempts; null without attempts. */
  readonly successRate: number | null
  readonly p50LatencyMs: number | null
  readonly p99LatencyMs: number | null
}

/** One URL of a source's destination, as the health page and `GET /admin/endpoints` show it. */
export interface EndpointHealth {
  readonly sourceId: string
  readonly destinationId: string
  readonly url: string
  /** Its position among the source's endpoints, destination by destination (0-based): the metrics' label. */
  readonly index: number
  readonly state: EndpointState
  /** Counted by this process's circuit since its start. */
  readonly consecutiveFailures: number
  readonly lastSuccessAt: number | null
  readonly lastFailure: { readonly at: number; readonly reason: string } | null
  /** When the open circuit's next probe may go. */
  readonly nextProbeAt: number | null
  readonly disabledReason: string | null
  readonly lastHour: EndpointWindow
  readonly lastDay: EndpointWindow
}

/** Which dead letters a bulk replay or purge takes, and whether to only count them. */
export interface RecoveryRequest {
  readonly sourceId: string
  readonly url?: string | undefined
  readonly since?: number | undefined
  readonly until?: number | undefined
  readonly dryRun: boolean
}

export interface RecoveryResult {
  readonly dryRun: boolean
  /** Dead letters replayed or purged (or that would be, in a dry run). */
  readonly count: number
}

const hourMillis = 3_600_000

const windowOf = (stats: EndpointStats): EndpointWindow => ({
  attempts: stats.attempts,
  successRate: stats.attempts === 0 ? null : stats.successes / stats.attempts,
  p50LatencyMs: stats.p50LatencyMs,
  p99LatencyMs: stats.p99LatencyMs
})

const stateOf = (
  snapshot: GuardSnapshot | undefined,
  disabled: boolean,
  lastSuccessAt: number | null,
  lastFailureAt: number | null
): EndpointState => {
  if (disabled || snapshot?.state === "disabled") return "disabled"
  if (snapshot?.state === "open" || snapshot?.state === "probing") return "paused"
  // This process delivers to the URL: its counters are the truth (enabling again reset them).
  if (snapshot !== undefined) return snapshot.consecutiveFailures > 0 ? "failing" : "healthy"
  return lastFailureAt !== null && (lastSuccessAt === null || lastFailureAt > lastSuccessAt) ? "failing" : "healthy"
}

const checkRecovery = (request: RecoveryRequest) => {
  const errors: Array<FieldIssue> = []
  if (request.sourceId === "") errors.push({ path: "sourceId", message: "is required" })
  if (request.url === "") errors.push({ path: "url", message: "must not be empty" })
  for (const field of ["since", "until"] as const) {
    const value = request[field]
    if (value !== undefined && (!Number.isFinite(value) || value < 0)) {
      errors.push({ path: field, message: "must be a time (epoch milliseconds or an ISO 8601 date)" })
    }
  }
  if (request.since !== undefined && request.until !== undefined && request.since > request.until) {
    errors.push({ path: "until", message: "must not be before since" })
  }
  return errors.length === 0 ? Effect.void : Effect.fail(new InvalidAdminRequest({ errors }))
}

/** Endpoint health, enabling and disabling endpoints, and bulk recovery of dead letters, for `Relay`. */
export const makeEndpointAdmin = (
  records: EndpointsShape,
  guards: Option.Option<EndpointGuardsShape>,
  signal: OutboxSignalShape,
  sourceById: (sourceId: string) => Effect.Effect<StoredSource, UnknownSource | StoreError>,
  listSources: Effect.Effect<ReadonlyArray<StoredSource>, StoreError>,
  /** After an endpoint was enabled or disabled: the other processes are told (`SettingsVersion`). */
  settingsChanged: Effect.Effect<void>
) => {
  const endpointHealth = (sourceId: string, destinationId?: string) =>
    Effect.gen(function*() {
      const source = yield* sourceById(sourceId)
      if (destinationId !== undefined && destinationById(source.destinations, destinationId) === undefined) {
        return yield* new UnknownDestination({ sourceId, destinationId })
      }
      const now = yield* Clock.currentTimeMillis
      const disabled = new Map((yield* records.disabledEndpoints()).map((row) => [endpointKeyString(row), row.reason]))
      const all = endpointsOf(source.destinations).map((entry, index) => ({ ...entry, index }))
      const listed = destinationId === undefined ? all : all.filter((entry) => entry.destinationId === destinationId)
      return yield* Effect.forEach(listed, ({ destinationId, endpoint, index }) =>
        Effect.gen(function*() {
          const endpointKey = { sourceId: source.id, destinationId, url: endpoint.url }
          const key = endpointKeyString(endpointKey)
          const snapshot = Option.isSome(guards) ? guards.value.snapshot(endpointKey) : undefined
          const last = yield* records.endpointLastAttempts(endpointKey)
          const hour = yield* records.endpointStats(endpointKey, now - hourMillis)
          const day = yield* records.endpointStats(endpointKey, now - 24 * hourMillis)
          const health: EndpointHealth = {
            sourceId: source.id,
            destinationId,
            url: endpoint.url,
            index,
            state: stateOf(snapshot, disabled.has(key), last.lastSuccessAt, last.lastFailureAt),
            consecutiveFailures: snapshot?.consecutiveFailures ?? 0,
            lastSuccessAt: last.lastSuccessAt,
            lastFailure: last.lastFailureAt === null
              ? null
              : { at: last.lastFailureAt, reason: last.lastFailure ?? "unknown" },
            nextProbeAt: snapshot?.nextProbeAt ?? null,
            // The guard disables at once and writes the store's row after: its reason covers the moment between.
            disabledReason: disabled.get(key) ?? snapshot?.disabledReason ?? null,
            lastHour: windowOf(hour),
            lastDay: windowOf(day)
          }
          return health
        }))
    })

  const enableEndpoint = (selector: EndpointSelector): Effect.Effect<ReadonlyArray<EndpointKey>, StoreError> =>
    Effect.tap(
      Option.isSome(guards) ? guards.value.enable(selector) : records.enableEndpoints(selector),
      settingsChanged
    )

  /** The endpoints a selector names: the triple itself when whole, else every configured endpoint it takes. */
  const selected = (selector: EndpointSelector) =>
    selector.sourceId !== undefined && selector.destinationId !== undefined
      ? Effect.succeed<ReadonlyArray<EndpointKey>>([{
        sourceId: selector.sourceId,
        destinationId: selector.destinationId,
        url: selector.url
      }])
      : Effect.map(listSources, (sources) =>
        sources.flatMap((source) =>
          endpointsOf(source.destinations)
            .map(({ destinationId, endpoint }): EndpointKey => ({
              sourceId: source.id,
              destinationId,
              url: endpoint.url
            }))
            .filter((key) => selects(selector, key))
        ))

  const disableEndpoint = (selector: EndpointSelector, reason: string) =>
    Effect.gen(function*() {
      const keys = yield* selected(selector)
      const now = yield* Clock.currentTimeMillis
      yield* Effect.forEach(keys, (key) =>
        Option.isSome(guards) ? guards.value.disable(key, reason) : records.disableEndpoint(key, now, reason))
      yield* settingsChanged
      return keys
    })

  const recover = (action: "replay" | "purge") => (request: RecoveryRequest) =>
    Effect.gen(function*() {
      yield* checkRecovery(request)
      const source = yield* sourceById(request.sourceId)
      const filter = {
        sourceId: source.id,
        url: request.url,
        since: request.since,
        until: request.until,
        // A dead letter goes back only to a destination the source has (REFERENCE §1a); a purge takes any.
        ...(action === "replay" && { destinationIds: source.destinations.map((destination) => destination.id) })
      }
      const now = yield* Clock.currentTimeMillis
      const count = action === "replay"
        ? yield* records.replayDeadLetters(filter, now, request.dryRun)
        : yield* records.purgeDeadLettersMatching(filter, request.dryRun)
      if (action === "replay" && !request.dryRun && count > 0) yield* signal.notify
      const result: RecoveryResult = { dryRun: request.dryRun, count }
      return result
    })

  return {
    endpointHealth,
    enableEndpoint,
    disableEndpoint,
    replayDeadLetters: recover("replay"),
    purgeDeadLetters: recover("purge")
  }
}
