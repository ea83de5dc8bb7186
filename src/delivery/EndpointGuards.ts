import { Clock, Context, Duration, Effect, Latch, Layer, Option } from "effect"
import type { Scope } from "effect"
import { type EndpointKey, endpointKeyString, type EndpointSelector, selects } from "../domain/EndpointKey.js"
import type { Endpoint } from "../domain/Settings.js"
import { setEndpointGauges } from "../metrics/EndpointGauges.js"
import { Endpoints } from "../store/Endpoints.js"
import { EndpointShare } from "../store/EndpointShare.js"
import { SettingsVersion } from "../store/SettingsVersion.js"
import type { StoreError } from "../store/StoreError.js"
import { EndpointGuard } from "./EndpointGuard.js"
import type { GuardEvent, GuardSnapshot } from "./EndpointGuard.js"
import { makeLinks } from "./EndpointGuardsLink.js"

/**
 * Where the endpoint events go besides the log (the operator webhook). Optional: without it they are only logged.
 * Must not block: it is called from the events' own fiber, never from a delivery.
 */
export class GuardEventSink extends Context.Service<GuardEventSink, {
  readonly publish: (
    event: GuardEvent & { readonly sourceIds: ReadonlyArray<string>; readonly destinationId?: string }
  ) => Effect.Effect<void>
}>()("hookrelay/delivery/GuardEventSink") {}

export interface EndpointGuardsShape {
  /** The endpoint's guard (made on first use); the dispatcher's endpoint actors hold it. */
  readonly guardFor: (endpoint: EndpointKey) => EndpointGuard
  /** A source's endpoints as its settings say now (in the source's order): their circuit and rate-limit settings. */
  readonly configure: (
    sourceId: string,
    endpoints: ReadonlyArray<{ readonly destinationId: string; readonly endpoint: Endpoint }>
  ) => void
  /** The endpoint's health in this process, or undefined when no job went to it since the start. */
  readonly snapshot: (endpoint: EndpointKey) => GuardSnapshot | undefined
  /** Disabled by an operator (persisted, shared by every process). */
  readonly disable: (endpoint: EndpointKey, reason: string) => Effect.Effect<void, StoreError>
  /** Every endpoint the selector takes enabled again, its health afresh; the ones that were disabled. */
  readonly enable: (selector: EndpointSelector) => Effect.Effect<ReadonlyArray<EndpointKey>, StoreError>
}

/**
 * The guards of every endpoint (source, destination, URL: REFERENCE §7b) this process delivers to. Alone (SQLite)
 * their circuit breakers and rate limits are in memory; with an `EndpointShare` (the store's on PostgreSQL) they are
 * the deployment's (`EndpointGuardsLink`). Disabled endpoints are in the store, read again every `refreshEvery` and
 * when the settings version moves, so that one disabled or enabled elsewhere is seen here. Events are logged at warn
 * and handed to the `GuardEventSink`; in a deployment only the process that made the change tells.
 */
export class EndpointGuards extends Context.Service<EndpointGuards, EndpointGuardsShape>()(
  "hookrelay/delivery/EndpointGuards"
) {}

const refreshEvery = Duration.seconds(2)
// How often the settings version is looked at: an endpoint disabled on another replica is seen within it.
const versionCheckMillis = 200

export const make: Effect.Effect<EndpointGuardsShape, never, Endpoints | Scope.Scope> = Effect.gen(function*() {
  const endpoints = yield* Endpoints
  const clock = yield* Clock.Clock
  const versions = yield* Effect.serviceOption(SettingsVersion)
  const sink = yield* Effect.serviceOption(GuardEventSink)
  const share = Option.getOrUndefined(yield* Effect.serviceOption(EndpointShare)) ?? endpoints.share
  const guards = new Map<string, { readonly key: EndpointKey; readonly guard: EndpointGuard }>()
  // Each source's endpoints in settings order: the gauges' labels.
  const keysOf = new Map<string, ReadonlyArray<string>>()
  let events: Array<{ readonly key: EndpointKey; readonly event: GuardEvent }> = []
  // Disabled here and not yet written: a refresh must not enable them again.
  const unwritten = new Set<string>()
  const eventsWaiting = yield* Latch.make(false)
  let disabled = new Set<string>()

  const emit = (key: EndpointKey) => (event: GuardEvent): void => {
    if (event.type === "endpoint.disabled") unwritten.add(endpointKeyString(key))
    events.push({ key, event })
    eventsWaiting.openUnsafe()
  }
  const links = share === undefined ? undefined : yield* makeLinks(share, clock, emit)

  const guardFor = (key: EndpointKey): EndpointGuard => {
    const id = endpointKeyString(key)
    let entry = guards.get(id)
    if (entry === undefined) {
      entry = { key, guard: new EndpointGuard(key.url, clock, emit(key), links?.linkFor(key)) }
      links?.adopt(id, entry.guard)
      if (disabled.has(id)) entry.guard.markDisabled()
      guards.set(id, entry)
    }
    return entry.guard
  }

  const configure: EndpointGuardsShape["configure"] = (sourceId, list) => {
    keysOf.set(
      sourceId,
      list.map(({ destinationId, endpoint }) => endpointKeyString({ sourceId, destinationId, url: endpoint.url }))
    )
    for (const { destinationId, endpoint } of list) {
      guardFor({ sourceId, destinationId, url: endpoint.url }).configure(endpoint)
    }
  }

  const publish = ({ event, key }: { readonly key: EndpointKey; readonly event: GuardEvent }) =>
    Effect.gen(function*() {
      yield* Effect.logWarning(`${event.type}: ${event.reason}`).pipe(
        Effect.annotateLogs({ url: event.url, sourceId: key.sourceId, destinationId: key.destinationId })
      )
      let first = true
      if (event.type === "endpoint.disabled") {
        first = yield* endpoints.disableEndpoint(key, event.at, event.reason).pipe(
          Effect.catch((error) => Effect.as(Effect.logError("could not record a disabled endpoint", error), true))
        )
        unwritten.delete(endpointKeyString(key))
        disabled.add(endpointKeyString(key))
      }
      // In a deployment, another process that disabled it first has told.
      if (Option.isSome(sink) && (first || share === undefined)) {
        yield* sink.value.publish({ ...event, sourceIds: [key.sourceId], destinationId: key.destinationId })
      }
    })

  const drain = Effect.forever(Effect.gen(function*() {
    yield* eventsWaiting.await
    yield* eventsWaiting.close
    const batch = events
    events = []
    for (const event of batch) yield* publish(event)
  }))

  // Also sets the gauges, from memory: no query per endpoint.
  const refresh = Effect.gen(function*() {
    const rows = yield* endpoints.disabledEndpoints()
    disabled = new Set(rows.map(endpointKeyString))
    for (const [id, { guard }] of guards) {
      if (disabled.has(id)) guard.markDisabled()
      else if (guard.state === "disabled" && !unwritten.has(id)) guard.enable()
    }
    for (const [sourceId, ids] of keysOf) {
      ids.forEach((id, index) => {
        const guard = guards.get(id)?.guard
        if (guard !== undefined) setEndpointGauges(sourceId, index, guard.state, guard.consecutiveFailures)
      })
    }
  }).pipe(Effect.catch(() => Effect.void))

  yield* refresh
  if (links !== undefined) yield* links.follow
  // Interruptible again: the dispatcher builds these inside its uninterruptible acquisition.
  yield* Effect.forkScoped(Effect.interruptible(drain))
  // Every `refreshEvery`, and as soon as the settings version moves (an admin write here or on another replica).
  const generation = Option.match(versions, { onNone: () => () => 0, onSome: (version) => version.generation })
  let seen = generation()
  let refreshedAt = clock.currentTimeMillisUnsafe()
  const refreshWhenDue = Effect.suspend(() => {
    const now = clock.currentTimeMillisUnsafe()
    const current = generation()
    if (current === seen && now - refreshedAt < Duration.toMillis(refreshEvery)) return Effect.void
    seen = current
    refreshedAt = now
    return refresh
  })
  const checkEvery = Option.isSome(versions) ? Duration.millis(versionCheckMillis) : refreshEvery
  yield* Effect.forkScoped(
    Effect.interruptible(Effect.forever(Effect.andThen(Effect.sleep(checkEvery), refreshWhenDue)))
  )

  return {
    guardFor,
    configure,
    snapshot: (key) => guards.get(endpointKeyString(key))?.guard.snapshot(),
    disable: (key, reason) =>
      Effect.suspend(() => {
        const now = clock.currentTimeMillisUnsafe()
        return Effect.andThen(
          Effect.asVoid(endpoints.disableEndpoint(key, now, reason)),
          Effect.sync(() => {
            disabled.add(endpointKeyString(key))
            guardFor(key).markDisabled()
          })
        )
      }),
    enable: (selector) =>
      Effect.tap(endpoints.enableEndpoints(selector), () =>
        Effect.suspend(() => {
          // Every guard the selector takes starts afresh, whether or not the store had it disabled (`unwritten`).
          const taken: Array<EndpointKey> = []
          for (const [id, { guard, key }] of guards) {
            if (!selects(selector, key)) continue
            disabled.delete(id)
            unwritten.delete(id)
            guard.enable()
            taken.push(key)
          }
          return links === undefined ? Effect.void : Effect.forEach(taken, links.forget, { discard: true })
        }))
  }
})

export const layer: Layer.Layer<EndpointGuards, never, Endpoints> = Layer.effect(EndpointGuards, make)
