import { Clock, Context, Effect, Layer, Option } from "effect"
import * as Audiences from "../audiences/Audiences.js"
import { EndpointGuards } from "../delivery/EndpointGuards.js"
import { DeliveryOutcomes } from "../delivery/Outcomes.js"
import { currentOrDefault as currentEgressPolicy } from "../network/EgressPolicy.js"
import { IngestAdmission } from "../overload/IngestAdmission.js"
import { IngestPressure } from "../overload/IngestPressure.js"
import { ApiKeys } from "../store/ApiKeys.js"
import { AuditLog } from "../store/AuditLog.js"
import { DeadLetters } from "../store/DeadLetters.js"
import { Endpoints } from "../store/Endpoints.js"
import { MessageLog } from "../store/MessageLog.js"
import { Outbox } from "../store/Outbox.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { SettingsVersion } from "../store/SettingsVersion.js"
import { makeSourceCache } from "../store/SourceCache.js"
import { Sources } from "../store/Sources.js"
import * as StoreHealth from "../store/StoreHealth.js"
import type { StoreServices } from "../store/StoreOperations.js"
import { Usage } from "../store/Usage.js"
import {
  Relay,
  RelayAccess,
  RelayAudiences,
  RelayDestinations,
  RelayEndpoints,
  RelayMessages,
  RelaySources
} from "./Relay.js"
import { makeAccess } from "./RelayAccess.js"
import { makeQueries, makeSourceAdmin, replayDeadLetter, requireSource, storeStatus } from "./RelayAdmin.js"
import { makeDestinationAdmin } from "./RelayDestinationAdmin.js"
import { makeEndpointAdmin } from "./RelayEndpoints.js"
import { makeIngest } from "./RelayIngest.js"
import { listMessages } from "./RelayMessageLog.js"

export { readinessProbeTimeout } from "./RelayAdmin.js"

/**
 * The engine's services (`RelayServices`): gathers the store's services, then puts together ingest (`RelayIngest`) and
 * the admin (`RelayAdmin`, `RelayEndpoints`, `audiences/`).
 */
export const make = Effect.gen(function*() {
  const audiences = yield* Audiences.make()
  const observedStore = yield* Effect.serviceOption(StoreHealth.StoreHealth)
  if (Option.isSome(observedStore)) return yield* makeOver(observedStore.value, audiences)
  // Built over a bare store (not through `layerEngine`): this engine observes its own calls.
  const health = yield* StoreHealth.make
  const observed = StoreHealth.observed(yield* Effect.context<StoreServices>(), health)
  return yield* Effect.provideContext(makeOver(health, audiences), observed)
})

const makeOver = (health: StoreHealth.StoreHealthShape, audiences: Effect.Success<ReturnType<typeof Audiences.make>>) =>
  Effect.gen(function*() {
    const stored = yield* Sources
    const outbox = yield* Outbox
    const messages = yield* MessageLog
    const deadLetters = yield* DeadLetters
    const egress = yield* currentEgressPolicy
    const signal = yield* OutboxSignal
    const deliveryOutcomes = yield* DeliveryOutcomes
    const admission = yield* IngestAdmission
    // Tells the dispatcher (when the engine has one in this process) that ingest is busy; see `IngestPressure`.
    const ingesting = Option.match(yield* Effect.serviceOption(IngestPressure), {
      onNone: () => <A, E, R>(commit: Effect.Effect<A, E, R>) => commit,
      onSome: (pressure) => pressure.ingesting
    })
    // Shared with the dispatcher through the settings version: an admin write here applies to its next claim.
    const sources = makeSourceCache(stored, Option.getOrUndefined(yield* Effect.serviceOption(SettingsVersion)))
    const clock = yield* Clock.Clock
    const context = yield* Effect.context<never>()

    const sourceById = requireSource(sources)
    const { authenticate, deleteSource, getSource, putSource, rotateSecret } = makeSourceAdmin(stored, sources, egress)
    const counts = yield* Usage
    const { searchMessages, usage } = makeQueries(counts, messages, sourceById)
    const endpoints = makeEndpointAdmin(
      yield* Endpoints,
      yield* Effect.serviceOption(EndpointGuards),
      signal,
      sourceById,
      stored.listSources(),
      sources.invalidate()
    )

    return Context.make(Relay, {
      ingest: makeIngest({ outbox, sourceById, admission, ingesting, signal, clock, context }),
      authenticate,
      outcomes: deliveryOutcomes.stream,
      storeStatus: storeStatus(stored, health)
    }).pipe(
      Context.add(RelaySources, {
        putSource,
        rotateSecret,
        getSource,
        listSources: stored.listSources(),
        deleteSource
      }),
      Context.add(RelayMessages, {
        messageJobs: messages.jobsForMessage,
        deadLetters: deadLetters.listDeadLetters,
        replayDeadLetter: replayDeadLetter(deadLetters, messages, stored, signal),
        backlog: outbox.backlog(),
        usage,
        listMessages: listMessages(messages),
        searchMessages
      }),
      Context.add(RelayAudiences, {
        deleteUser: audiences.deleteUser,
        getDeletion: audiences.getDeletion,
        syncAudience: audiences.syncAudience,
        syncComputedTrait: audiences.syncComputedTrait
      }),
      Context.add(RelayEndpoints, endpoints),
      Context.add(RelayDestinations, makeDestinationAdmin(stored, sources, counts, egress, deliveryOutcomes)),
      Context.add(RelayAccess, makeAccess(yield* ApiKeys, yield* AuditLog, messages))
    )
  })

/** The engine over the store's services in context; the dispatcher is a layer of its own (`Dispatcher.layer`). */
export const layer = Layer.effectContext(make)
