import { Clock, Context, Duration, Effect, Latch, Layer, Option } from "effect"
import type { Scope } from "effect"
import type { Endpoint } from "../domain/Settings.js"
import { setEndpointGauges } from "../metrics/EndpointGauges.js"
import { Endpoints } from "../store/Endpoints.js"
import type { StoreError } from "../store/StoreError.js"
import { EndpointGuard } from "./EndpointGuard.js"
import type { GuardEvent, GuardSnapshot } from "./EndpointGuard.js"

/**
 * Where the endpoint events go besides the log (the operator webhook). Optional: without it they are only logged.
 * Must not block: it is called from the events' own fiber, never from a delivery.
 */
export class GuardEventSink extends Context.Service<GuardEventSink, {
  readonly publish: (event: GuardEvent & { readonly sourceIds: ReadonlyArray<string> }) => Effect.Effect<void>
}>()("hookrelay/delivery/GuardEventSink") {}

export interface EndpointGuardsShape {
  /** The URL's guard (made on first use); the dispatcher's endpoint actors hold it. */
  readonly guardFor: (url: string) => EndpointGuard
  /** A source's endpoints as its settings say now: their circuit and rate-limit settings, which source uses them. */
  readonly configure: (sourceId: string, endpoints: ReadonlyArray<Endpoint>) => void
  /** The URL's health in this process, or undefined when no job went to it since the start. */
  readonly snapshot: (url: string) => GuardSnapshot | undefined
  /** Disabled by an operator (persisted, shared by every process). */
  readonly disable: (url: string, reason: string) => Effect.Effect<void, StoreError>
  /** Enabled again: its health starts afresh. `false` when it was not disabled. */
  readonly enable: (url: string) => Effect.Effect<boolean, StoreError>
}

/**
 * The guards of every URL this process delivers to: circuit breakers and rate limits are per process (each process
 * of a PostgreSQL deployment keeps its own), disabled URLs are in the store, read again every `refresh` so that a URL
 * disabled or enabled elsewhere is seen here. Events are logged at warn and handed to the `GuardEventSink`.
 */
export class EndpointGuards extends Context.Service<EndpointGuards, EndpointGuardsShape>()(
  "hookrelay/delivery/EndpointGuards"
) {}

const refreshEvery = Duration.seconds(2)

export const make: Effect.Effect<EndpointGuardsShape, never, Endpoints | Scope.Scope> = Effect.gen(function*() {
  const endpoints = yield* Endpoints
  const clock = yield* Clock.Clock
  const sink = yield* Effect.serviceOption(GuardEventSink)
  const guards = new Map<string, EndpointGuard>()
  const sources = new Map<string, Set<string>>()
  // Each source's URLs in settings order: the gauges' labels.
  const urlsOf = new Map<string, ReadonlyArray<string>>()
  let events: Array<GuardEvent> = []
  // Disabled here and not yet written: a refresh must not enable them again.
  const unwritten = new Set<string>()
  const eventsWaiting = yield* Latch.make(false)
  let disabled = new Set<string>()

  const emit = (event: GuardEvent): void => {
    if (event.type === "endpoint.disabled") unwritten.add(event.url)
    events.push(event)
    eventsWaiting.openUnsafe()
  }

  const guardFor = (url: string): EndpointGuard => {
    let guard = guards.get(url)
    if (guard === undefined) {
      guard = new EndpointGuard(url, clock, emit)
      if (disabled.has(url)) guard.markDisabled()
      guards.set(url, guard)
    }
    return guard
  }

  const configure = (sourceId: string, endpoints: ReadonlyArray<Endpoint>): void => {
    urlsOf.set(sourceId, endpoints.map((endpoint) => endpoint.url))
    for (const endpoint of endpoints) {
      guardFor(endpoint.url).configure(endpoint)
      let users = sources.get(endpoint.url)
      if (users === undefined) sources.set(endpoint.url, users = new Set())
      users.add(sourceId)
    }
  }

  const publish = (event: GuardEvent) =>
    Effect.gen(function*() {
      const sourceIds = [...sources.get(event.url) ?? []]
      yield* Effect.logWarning(`${event.type}: ${event.reason}`).pipe(
        Effect.annotateLogs({ url: event.url, sourceIds: sourceIds.join(",") })
      )
      if (event.type === "endpoint.disabled") {
        yield* endpoints.disableEndpoint(event.url, event.at, event.reason).pipe(
          Effect.catch((error) => Effect.logError("could not record a disabled endpoint", error))
        )
        unwritten.delete(event.url)
        disabled.add(event.url)
      }
      if (Option.isSome(sink)) yield* sink.value.publish({ ...event, sourceIds })
    })

  const drain = Effect.forever(Effect.gen(function*() {
    yield* eventsWaiting.await
    yield* eventsWaiting.close
    const batch = events
    events = []
    for (const event of batch) yield* publish(event)
  }))

  // Also sets the gauges, from memory: no query per URL.
  const refresh = Effect.gen(function*() {
    const rows = yield* endpoints.disabledEndpoints()
    disabled = new Set(rows.map((row) => row.url))
    for (const [url, guard] of guards) {
      if (disabled.has(url)) guard.markDisabled()
      else if (guard.state === "disabled" && !unwritten.has(url)) guard.enable()
    }
    for (const [sourceId, urls] of urlsOf) {
      urls.forEach((url, index) => {
        const guard = guards.get(url)
        if (guard !== undefined) setEndpointGauges(sourceId, index, guard.state, guard.consecutiveFailures)
      })
    }
  }).pipe(Effect.catch(() => Effect.void))

  yield* refresh
  // Interruptible again: the dispatcher builds these inside its uninterruptible acquisition.
  yield* Effect.forkScoped(Effect.interruptible(drain))
  yield* Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.andThen(Effect.sleep(refreshEvery), refresh))))

  return {
    guardFor,
    configure,
    snapshot: (url) => guards.get(url)?.snapshot(),
    disable: (url, reason) =>
      Effect.suspend(() => {
        const now = clock.currentTimeMillisUnsafe()
        return Effect.andThen(
          endpoints.disableEndpoint(url, now, reason),
          Effect.sync(() => {
            disabled.add(url)
            guardFor(url).markDisabled()
          })
        )
      }),
    enable: (url) =>
      Effect.tap(endpoints.enableEndpoint(url), () =>
        Effect.sync(() => {
          disabled.delete(url)
          unwritten.delete(url)
          guards.get(url)?.enable()
        }))
  }
})

export const layer: Layer.Layer<EndpointGuards, never, Endpoints> = Layer.effect(EndpointGuards, make)
