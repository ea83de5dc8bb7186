import { Effect, Latch } from "effect"
import type { Clock, Scope } from "effect"
import { type EndpointKey, endpointKeyString } from "../domain/EndpointKey.js"
import type { EndpointShareShape, SharedCircuit } from "../store/EndpointShare.js"
import type { EndpointGuard, GuardEvent, GuardLink } from "./EndpointGuard.js"

/** How often every process reads the deployment's failing circuits: a change elsewhere is followed within it. */
export const followEvery = 500
// How long a probe's process holds it: longer than the longest attempt (its timeout), so a live process's probe ends
// first; a process that died holding it is replaced after it.
const probeLeaseMillis = 35_000

/**
 * The guards' links to the deployment's circuits and rate limits (`EndpointShare`): reports go to the store in the
 * background, one at a time in their order, and each answer is followed by the guard it came from; every
 * `followEvery` the failing circuits are read and every guard follows its own (none: healthy). The process whose
 * statement opened or closed a circuit is the one that tells (`emit`), so an operator hears it once.
 */
export const makeLinks = (
  share: EndpointShareShape,
  clock: Clock.Clock,
  emit: (key: EndpointKey) => (event: GuardEvent) => void
): Effect.Effect<{
  readonly linkFor: (key: EndpointKey) => GuardLink
  readonly adopt: (id: string, guard: EndpointGuard) => void
  readonly follow: Effect.Effect<void, never, Scope.Scope>
  readonly forget: (key: EndpointKey) => Effect.Effect<void>
}> =>
  Effect.gen(function*() {
    let reports: Array<Effect.Effect<void>> = []
    const reportsWaiting = yield* Latch.make(false)
    let last = new Map<string, SharedCircuit>()
    const byId = new Map<string, EndpointGuard>()

    const report = (effect: Effect.Effect<void>): void => {
      reports.push(effect)
      reportsWaiting.openUnsafe()
    }
    const now = () => clock.currentTimeMillisUnsafe()
    // At debug: the store's own health logs an outage once; a report lost meanwhile only delays a transition.
    const logged = (what: string) => (error: unknown) => Effect.logDebug(`could not share ${what}`, error)

    const linkFor = (key: EndpointKey): GuardLink => {
      const id = endpointKeyString(key)
      const guard = () => byId.get(id)
      return {
        failed: (probe, reason) =>
          report(Effect.suspend(() =>
            share.failed(key, { now: now(), threshold: guard()?.failureThreshold ?? 1, probe }).pipe(
              Effect.map(({ circuit, opened }) => {
                guard()?.follow(circuit, now())
                if (!opened) return
                emit(key)({
                  type: "endpoint.circuit_opened",
                  url: key.url,
                  at: now(),
                  reason: `${circuit.failures} consecutive failures, the last: ${reason}`
                })
              }),
              Effect.catch(logged("a failure"))
            )
          )),
        succeeded: () =>
          report(
            share.succeeded(key).pipe(
              Effect.map((closed) => {
                if (closed) {
                  emit(key)({ type: "endpoint.recovered", url: key.url, at: now(), reason: "a probe succeeded" })
                }
              }),
              Effect.catch(logged("a success"))
            )
          ),
        probeAborted: () =>
          report(Effect.suspend(() =>
            Effect.catch(share.probeAborted(key, now()), logged("an aborted probe"))
          )),
        claimProbe: () => Effect.suspend(() => share.claimProbe(key, now(), probeLeaseMillis)),
        reserveStarts: (interval, count) => share.reserveStarts(key, interval, count)
      }
    }

    const adopt = (id: string, guard: EndpointGuard): void => {
      byId.set(id, guard)
      const circuit = last.get(id)
      if (circuit !== undefined) guard.follow(circuit, now())
    }

    const drain = Effect.forever(Effect.gen(function*() {
      yield* reportsWaiting.await
      yield* reportsWaiting.close
      const batch = reports
      reports = []
      for (const effect of batch) yield* effect
    }))

    const readAll = Effect.suspend(() => {
      const asOf = now()
      return share.circuits.pipe(
        Effect.map((circuits) => {
          last = new Map(circuits.map((circuit) => [endpointKeyString(circuit.key), circuit]))
          for (const [id, guard] of byId) guard.follow(last.get(id), asOf)
        }),
        Effect.ignore
      )
    })

    const follow = Effect.gen(function*() {
      yield* readAll
      yield* Effect.forkScoped(Effect.interruptible(drain))
      yield* Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.andThen(Effect.sleep(followEvery), readAll))))
    })

    // An endpoint enabled again by an operator starts healthy for every process.
    const forget = (key: EndpointKey) => Effect.ignore(share.succeeded(key))

    return { linkFor, adopt, follow, forget }
  })
