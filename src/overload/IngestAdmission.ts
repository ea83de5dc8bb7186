import { Context, Duration, Effect, Layer, Schedule } from "effect"
import { FifoGate } from "../runtime/FifoGate.js"
import { Outbox } from "../store/Outbox.js"
import { overloadDefaults, type OverloadOptions } from "./OverloadConfig.js"
import { Overloaded } from "./Overloaded.js"

export interface IngestAdmissionShape {
  /**
   * Runs one ingest commit if hookrelay is not overloaded, else fails with `Overloaded` before it
   * starts: first the backlog bound (a cached count, no query per request), then a slot among
   * `maxConcurrentIngests` waited for at most `admissionWait`. Once the slot is held the commit runs
   * to its end, however long the store takes: a request is never answered 503 and committed anyway.
   */
  readonly admit: <A extends { readonly jobsCreated: number }, E, R>(
    commit: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | Overloaded, R>
  /** The backlog as admission sees it: the last count plus the jobs created here since. */
  readonly estimatedBacklog: Effect.Effect<number>
}

/** Overload control of ingest (REFERENCE §8): refuse with 503 rather than buffer without limit. */
export class IngestAdmission extends Context.Service<IngestAdmission, IngestAdmissionShape>()(
  "hookrelay/IngestAdmission"
) {}

const retryAfter = (duration: Duration.Duration) => Math.max(1, Math.ceil(Duration.toSeconds(duration)))

/**
 * Counts the backlog when built and then every `backlogRefresh` on Effect's Clock (one query per
 * period whatever the traffic); jobs created through this process in between are added to the last
 * count, so a burst cannot overshoot the bound by a whole period's worth. A failed count keeps the
 * previous value.
 */
export const make = (options: OverloadOptions = {}) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const maxBacklog = options.maxBacklog ?? overloadDefaults.maxBacklog
    const wait = Duration.fromInputUnsafe(options.admissionWait ?? overloadDefaults.admissionWait)
    const refresh = Duration.fromInputUnsafe(options.backlogRefresh ?? overloadDefaults.backlogRefresh)
    const permits = new FifoGate(options.maxConcurrentIngests ?? overloadDefaults.maxConcurrentIngests)

    let counted = 0
    let createdSince = 0
    // Only what is still to deliver: the finished jobs' counts grow with retention and admission needs none.
    const count = outbox.backlog({ delivered: false, dead: false }).pipe(
      Effect.tap((backlog) =>
        Effect.sync(() => {
          counted = backlog.pending + backlog.delivering
          createdSince = 0
        })
      ),
      Effect.catchCause((cause) => Effect.logWarning("backlog count for ingest admission failed", cause))
    )
    yield* count
    yield* count.pipe(Effect.repeat(Schedule.spaced(refresh)), Effect.delay(refresh), Effect.forkScoped)

    const backlogFull = new Overloaded({ reason: "backlog", retryAfterSeconds: retryAfter(refresh) })
    const busy = new Overloaded({ reason: "busy", retryAfterSeconds: retryAfter(wait) })

    // The commit, holding a permit it gives back however it ends; a synchronous step in both arms rather than
    // `ensuring`'s finalizer, which took 10 more fiber steps on every tracking request.
    const holding = <A extends { readonly jobsCreated: number }, E, R>(commit: Effect.Effect<A, E, R>) =>
      Effect.matchCauseEffect(commit, {
        onFailure: (cause) => {
          permits.giveBack()
          return Effect.failCause(cause)
        },
        onSuccess: (result) => {
          permits.giveBack()
          createdSince += result.jobsCreated
          return Effect.succeed(result)
        }
      })

    // Every tracking request passes here: combinators, not a generator, and a free permit taken without a wait.
    const admit = <A extends { readonly jobsCreated: number }, E, R>(
      commit: Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | Overloaded, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend((): Effect.Effect<A, E | Overloaded, R> => {
          if (counted + createdSince >= maxBacklog) return Effect.fail(backlogFull)
          if (permits.tryTake()) return holding(restore(commit))
          return Effect.flatMap(
            permits.takeWithin(wait),
            (acquired): Effect.Effect<A, E | Overloaded, R> => acquired ? holding(restore(commit)) : Effect.fail(busy)
          )
        })
      )

    return IngestAdmission.of({
      admit,
      estimatedBacklog: Effect.sync(() => counted + createdSince)
    })
  })

/** Admission over the `Outbox` in context, with its backlog counter running for the layer's life. */
export const layer = (options: OverloadOptions = {}): Layer.Layer<IngestAdmission, never, Outbox> =>
  Layer.effect(IngestAdmission, make(options))
