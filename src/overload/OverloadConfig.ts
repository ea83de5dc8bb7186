import { Config, Duration, Schema } from "effect"
import { positiveDurationConfig } from "../domain/DurationConfig.js"

/**
 * The overload bounds of ingest (REFERENCE §8): past them ingest answers 503 with `Retry-After`
 * instead of buffering without limit.
 */
export interface OverloadOptions {
  /** Jobs waiting for delivery (pending or being delivered) above which ingest is refused. */
  readonly maxBacklog?: number | undefined
  /** Ingest requests committing to the store at once; the others wait for a slot. */
  readonly maxConcurrentIngests?: number | undefined
  /** How long a request waits for a slot before it is refused; its transaction never starts then. */
  readonly admissionWait?: Duration.Input | undefined
  /** How often the backlog is counted (jobs created here in between are added to the last count). */
  readonly backlogRefresh?: Duration.Input | undefined
}

export const overloadDefaults = {
  maxBacklog: 1_000_000,
  maxConcurrentIngests: 32,
  admissionWait: Duration.seconds(2),
  backlogRefresh: Duration.seconds(5)
} as const

/** Accepts a number of milliseconds (`2000`) or an Effect duration (`2 seconds`). */
const atLeastOne = Schema.makeFilter((value: number) => Number.isInteger(value) && value >= 1, {
  message: "must be a whole number of at least 1"
})

const positiveInteger = (name: string, fallback: number) =>
  Config.schema(Schema.NumberFromString.check(atLeastOne), name).pipe(Config.withDefault(fallback))

/**
 * `HOOKRELAY_MAX_BACKLOG` (default 1 000 000 jobs), `HOOKRELAY_INGEST_CONCURRENCY` (default 32),
 * `HOOKRELAY_INGEST_WAIT` (default 2 s).
 */
export const overloadConfig: Config.Config<OverloadOptions> = Config.all({
  maxBacklog: positiveInteger("HOOKRELAY_MAX_BACKLOG", overloadDefaults.maxBacklog),
  maxConcurrentIngests: positiveInteger("HOOKRELAY_INGEST_CONCURRENCY", overloadDefaults.maxConcurrentIngests),
  admissionWait: positiveDurationConfig("HOOKRELAY_INGEST_WAIT", overloadDefaults.admissionWait)
})
