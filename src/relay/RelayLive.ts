import { Clock, Effect, Layer, Option } from "effect"
import * as Audiences from "../audiences/Audiences.js"
import { EndpointGuards } from "../delivery/EndpointGuards.js"
import { DeliveryOutcomes } from "../delivery/Outcomes.js"
import { currentOrDefault as currentEgressPolicy } from "../network/EgressPolicy.js"
import { IngestAdmission } from "../overload/IngestAdmission.js"
import { IngestPressure } from "../overload/IngestPressure.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Store } from "../store/Store.js"
import * as StoreHealth from "../store/StoreHealth.js"
import { Relay } from "./Relay.js"
import { makeQueries, makeSourceAdmin, replayDeadLetter, requireSource, storeStatus } from "./RelayAdmin.js"
import { makeEndpointAdmin } from "./RelayEndpoints.js"
import { makeIngest } from "./RelayIngest.js"

export { readinessProbeTimeout } from "./RelayAdmin.js"

/** The Relay service: gathers its services, then puts together ingest (`RelayIngest`) and the admin (`RelayAdmin`). */
export const make = Effect.gen(function*() {
  const observedStore = yield* Effect.serviceOption(StoreHealth.StoreHealth)
  // Built over a bare `Store` (not through `layerEngine`): this engine observes its own calls.
  const health = Option.isSome(observedStore) ? observedStore.value : yield* StoreHealth.make
  const store = Option.isSome(observedStore) ? yield* Store : StoreHealth.observed(yield* Store, health)
  const egress = yield* currentEgressPolicy
  const signal = yield* OutboxSignal
  const deliveryOutcomes = yield* DeliveryOutcomes
  const admission = yield* IngestAdmission
  // Tells the dispatcher (when the engine has one in this process) that ingest is busy; see `IngestPressure`.
  const ingesting = Option.match(yield* Effect.serviceOption(IngestPressure), {
    onNone: () => <A, E, R>(commit: Effect.Effect<A, E, R>) => commit,
    onSome: (pressure) => pressure.ingesting
  })
  const sources = makeSourceCache(store)
  const audiences = yield* Audiences.make()
  const clock = yield* Clock.Clock
  const context = yield* Effect.context<never>()

  const sourceById = requireSource(sources)
  const { authenticate, deleteSource, getSource, putSource, rotateSecret } = makeSourceAdmin(store, sources, egress)
  const { searchMessages, usage } = makeQueries(store, sourceById)
  const endpoints = makeEndpointAdmin(store, yield* Effect.serviceOption(EndpointGuards), signal, sourceById)

  return Relay.of({
    ingest: makeIngest({ store, sourceById, admission, ingesting, signal, clock, context }),
    authenticate,
    putSource,
    rotateSecret,
    getSource,
    listSources: store.listSources(),
    deleteSource,
    messageJobs: store.jobsForMessage,
    deadLetters: store.listDeadLetters,
    replayDeadLetter: replayDeadLetter(store, signal),
    backlog: store.backlog(),
    usage,
    searchMessages,
    deleteUser: audiences.deleteUser,
    getDeletion: audiences.getDeletion,
    syncAudience: audiences.syncAudience,
    syncComputedTrait: audiences.syncComputedTrait,
    outcomes: deliveryOutcomes.stream,
    storeStatus: storeStatus(store, health),
    ...endpoints
  })
})

/** The engine over the `Store` in context; the dispatcher is a layer of its own (`Dispatcher.layer`). */
export const layer = Layer.effect(Relay, make)
