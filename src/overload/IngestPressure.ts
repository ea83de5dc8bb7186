import { Clock, Context, Duration, Effect, Layer, Metric, Schedule } from "effect"
import { performance } from "node:perf_hooks"
import { YieldToIngest } from "../delivery/dispatcher/Options.js"
import { claimsHeldForIngest } from "../metrics/Metrics.js"

/** Cumulative time the event loop spent working and waiting (ms), as `performance.eventLoopUtilization` counts it. */
export interface LoopTimes {
  readonly active: number
  readonly idle: number
}

export interface IngestPressureShape {
  /** Runs one ingest commit, counted as ingest at work while it runs (every tracking request's transaction). */
  readonly ingesting: <A, E, R>(commit: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * Ingest saturates this process: a commit is running or ended within the last sample, and the event loop was busy
   * at least `busyThreshold` of the last sample.
   */
  readonly saturated: Effect.Effect<boolean>
  /** Returns once ingest no longer saturates this process, or after `maxHold` at the latest (at once if it does not). */
  readonly yieldToIngest: (maxHold: Duration.Input) => Effect.Effect<void>
}

/**
 * Ingest and delivery share one event loop. When they compete for it, ingest goes first: a client waits on its request,
 * a delivery only on the outbox, where its job is safe. The dispatcher asks here before each claim and holds its claims
 * back (jobs already in memory go on) while ingest saturates the process, for a bounded time, so that delivery never
 * stops under a sustained load. Deliveries started during a burst only slowed ingest, and holding claims back while
 * ingest saturates the loop delivers the last message no later (bench/NOTES.md, "Ingest before delivery").
 */
export class IngestPressure
  extends Context.Service<IngestPressure, IngestPressureShape>()("hookrelay/IngestPressure")
{}

export interface IngestPressureOptions {
  /** Share of a sample the event loop must be busy for ingest to count as saturating it. Default 0.85. */
  readonly busyThreshold?: number | undefined
  /** How often the event loop's busy share is read. Default 50 ms. */
  readonly sampleEvery?: Duration.Input | undefined
  /** How often a held claim looks again. Default 10 ms. */
  readonly recheckEvery?: Duration.Input | undefined
  /** The event loop's cumulative times; default `performance.eventLoopUtilization()` of this thread. */
  readonly loopTimes?: (() => LoopTimes) | undefined
}

export const pressureDefaults = {
  busyThreshold: 0.85,
  sampleEvery: Duration.millis(50),
  recheckEvery: Duration.millis(10)
} as const

const nodeLoopTimes = (): LoopTimes => performance.eventLoopUtilization()

/** The pressure gauge; its sampler runs on Effect's Clock for the life of the scope. */
export const make = (options: IngestPressureOptions = {}) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const busyThreshold = options.busyThreshold ?? pressureDefaults.busyThreshold
    const sampleEvery = Duration.fromInputUnsafe(options.sampleEvery ?? pressureDefaults.sampleEvery)
    const recheckEvery = options.recheckEvery ?? pressureDefaults.recheckEvery
    const loopTimes = options.loopTimes ?? nodeLoopTimes
    const sampleMillis = Duration.toMillis(sampleEvery)

    let running = 0
    let lastEndedAt = -Infinity
    let busyShare = 0
    let previous = loopTimes()
    const sample = Effect.sync(() => {
      const current = loopTimes()
      const active = current.active - previous.active
      const total = active + current.idle - previous.idle
      busyShare = total > 0 ? active / total : 0
      previous = current
    })
    yield* sample.pipe(Effect.repeat(Schedule.spaced(sampleEvery)), Effect.delay(sampleEvery), Effect.forkScoped)

    // A sender's next request comes a moment after its last answer: the sample after a commit ended still counts.
    const isSaturated = () =>
      busyShare >= busyThreshold && (running > 0 || clock.currentTimeMillisUnsafe() - lastEndedAt <= sampleMillis)
    const ended = (): void => {
      running -= 1
      lastEndedAt = clock.currentTimeMillisUnsafe()
    }

    const yieldToIngest = (maxHold: Duration.Input) =>
      Effect.suspend(() => {
        if (!isSaturated()) return Effect.void
        const since = clock.currentTimeMillisUnsafe()
        const until = since + Duration.toMillis(Duration.fromInputUnsafe(maxHold))
        return Effect.sleep(recheckEvery).pipe(
          Effect.repeat({ until: () => !isSaturated() || clock.currentTimeMillisUnsafe() >= until }),
          Effect.ensuring(
            Effect.suspend(() => Metric.update(claimsHeldForIngest, (clock.currentTimeMillisUnsafe() - since) / 1000))
          )
        )
      })

    return IngestPressure.of({
      // Uninterruptible from the count until `ended` is sure to run: an interruption there would leave the commit counted.
      // `ended` as a synchronous step in both arms, not `ensuring`'s finalizer: 7 fiber steps instead of 17, on every
      // tracking request.
      ingesting: (commit) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.suspend(() => {
            running += 1
            return Effect.matchCauseEffect(restore(commit), {
              onFailure: (cause) => {
                ended()
                return Effect.failCause(cause)
              },
              onSuccess: (value) => {
                ended()
                return Effect.succeed(value)
              }
            })
          })
        ),
      saturated: Effect.sync(isSaturated),
      yieldToIngest
    })
  })

/** The gauge, also as the dispatcher's `YieldToIngest`: claims are held back while ingest saturates the process. */
export const layer = (options: IngestPressureOptions = {}): Layer.Layer<IngestPressure | YieldToIngest> =>
  Layer.effectContext(
    Effect.map(
      make(options),
      (pressure) => Context.make(IngestPressure, pressure).pipe(Context.add(YieldToIngest, pressure))
    )
  )
