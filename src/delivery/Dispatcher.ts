import { Cause, Clock, Effect, FiberSet, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { Endpoints } from "../store/Endpoints.js"
import { Outbox } from "../store/Outbox.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { Sources } from "../store/Sources.js"
import { DeliveryTracing } from "./DeliveryTracing.js"
import { makeClaimer } from "./dispatcher/Claimer.js"
import { makeCompletions } from "./dispatcher/Completions.js"
import { makeActors } from "./dispatcher/EndpointActors.js"
import { makeJobRuns } from "./dispatcher/JobRuns.js"
import { makeLeases } from "./dispatcher/Leases.js"
import { settings as settingsOf, YieldToIngest } from "./dispatcher/Options.js"
import type { DispatcherOptions } from "./dispatcher/Options.js"
import * as EndpointGuards from "./EndpointGuards.js"
import { DeliveryOutcomes } from "./Outcomes.js"
import { Transport } from "./Transport.js"

export { YieldToIngest } from "./dispatcher/Options.js"
export type { DispatcherOptions } from "./dispatcher/Options.js"

/**
 * The dispatcher: claims due jobs from the store under a lease and delivers each with `deliver`, the one delivery
 * program. Its roles, each in `dispatcher/`:
 *
 * - the claimer (`Claimer`) takes due jobs while memory and the sources' mailboxes have room;
 * - the endpoint actors (`EndpointActors`) hold each URL's mailbox, workers and concurrency limit;
 * - the job runs (`JobRuns`) deliver each job and conclude it: a retry due within `maxInlineDelay` waits in memory,
 *   a later one goes back to the store with the job's per-URL progress, so the 4 h window and the backoff survive
 *   restarts;
 * - the completions (`Completions`) write finished jobs and every attempt in batches, with metrics and outcomes;
 * - the leases (`Leases`) are what the dispatcher holds: renewed, given back, and the memory bound.
 *
 * On shutdown the job fibers are interrupted (their requests aborted, their attempts recorded), the last batch is
 * written and every lease still held is released.
 */
export const make = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    // Telemetry: decided once here; without it the dispatcher makes no span and captures no context.
    const tracing = Option.getOrUndefined(yield* Effect.serviceOption(DeliveryTracing))
    const outbox = tracing === undefined ? yield* Outbox : tracing.outbox(yield* Outbox)
    const sources = yield* Sources
    const signal = yield* OutboxSignal
    const outcomes = yield* DeliveryOutcomes
    const clock = yield* Clock.Clock
    const transport = yield* Transport
    // The engine's guards, shared with the health queries; a dispatcher on its own keeps its own.
    const sharedGuards = yield* Effect.serviceOption(EndpointGuards.EndpointGuards)
    const guards = Option.isSome(sharedGuards) ? sharedGuards.value : yield* EndpointGuards.make
    const settings = settingsOf(options)
    const owner = options.owner ?? randomUUID()
    const yielding = yield* Effect.serviceOption(YieldToIngest)
    const maxIngestYield = settings.maxIngestYield
    const yieldToIngest = maxIngestYield === false || Option.isNone(yielding)
      ? Effect.void
      : yielding.value.yieldToIngest(maxIngestYield)

    const fibers = yield* FiberSet.make<void, never>()
    // Forks from synchronous code into the set. The runtime is captured here, inside the layer's acquisition, which is
    // uninterruptible: the forked fibers must be made interruptible again, or nothing could stop them.
    const forkIn = yield* FiberSet.runtime(fibers)<Transport>()
    const fork = (effect: Effect.Effect<void, never, Transport>) => forkIn(Effect.interruptible(effect))

    const leases = makeLeases({ owner, outbox, signal, settings })
    const completions = yield* makeCompletions({
      owner,
      outbox,
      outcomes,
      flushDelay: settings.flushDelay,
      flushSize: settings.flushSize
    })
    // The actors' workers run jobs; a job's run posts its retries back to the actors.
    const actors = makeActors({ settings, leases, guards, fork, runJob: (run) => runs.runJob(run) })
    const runs = makeJobRuns({
      settings,
      leases,
      completions,
      actors,
      signal,
      clock,
      services: tracing === undefined ? { transport, clock } : { transport, clock, traceAttempt: tracing.attempt },
      fork
    })
    const claimer = makeClaimer({ owner, outbox, sources, signal, settings, leases, runs, guards, yieldToIngest })

    /** Shutdown: no job starts any more, and every job fiber is interrupted (attempts in flight aborted, recorded). */
    const stop = Effect.suspend(() => {
      actors.stop()
      return FiberSet.clear(fibers)
    })

    return {
      owner,
      claimer,
      renewer: leases.renewWith(completions.unwritten),
      flusher: completions.flusher,
      flush: completions.flush,
      held: leases.held,
      stop
    }
  })

/**
 * Starts a dispatcher whose fibers live in the current scope, and returns it (its `held` jobs are what it holds in
 * memory now). At start it takes back jobs a previous process on an exclusive store (SQLite) left leased when it died;
 * when the scope closes it stops, writes what it finished and releases every lease it still holds.
 */
export const start = (options: DispatcherOptions = {}) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    // Registered first, so it runs last: after the job fibers stopped, write what they finished and release the rest.
    const dispatcher = yield* Effect.acquireRelease(make(options), (dispatcher) =>
      Effect.gen(function*() {
        yield* dispatcher.stop
        yield* dispatcher.flush
        const released = yield* outbox.releaseLeases(dispatcher.owner).pipe(Effect.orElseSucceed(() => 0))
        if (released > 0) yield* Effect.logInfo(`released ${released} leased jobs back to the outbox`)
      }))
    const recovered = yield* outbox.recoverAbandonedLeases().pipe(Effect.orElseSucceed(() => 0))
    if (recovered > 0) yield* Effect.logInfo(`took back ${recovered} jobs left leased by a stopped process`)
    yield* Effect.forkScoped(restartOnDefect("writing finished jobs", dispatcher.flusher))
    yield* Effect.forkScoped(restartOnDefect("renewing leases", dispatcher.renewer))
    yield* Effect.forkScoped(restartOnDefect("claiming jobs", dispatcher.claimer))
    return dispatcher
  })

/**
 * A background loop that dies of a defect would stop silently while the process looks healthy (finished jobs never
 * written, leases renewed forever): the defect is logged and the loop started again after a second.
 */
export const restartOnDefect = <R>(what: string, loop: Effect.Effect<void, never, R>): Effect.Effect<void, never, R> =>
  Effect.catchCause(loop, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.logError(`${what} stopped on a defect; starting it again`, cause).pipe(
        Effect.andThen(Effect.sleep("1 second")),
        Effect.andThen(Effect.suspend(() => restartOnDefect(what, loop)))
      ))

/** The dispatcher as a background layer: `start` in the layer's scope. */
export const layer = (options: DispatcherOptions = {}): Layer.Layer<
  never,
  never,
  Outbox | Sources | Endpoints | Transport | OutboxSignal | DeliveryOutcomes
> => Layer.effectDiscard(start(options))
