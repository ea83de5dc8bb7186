import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { type FieldIssue, issuesFromParseError } from "../domain/Issues.js"
import { maxBatchMessages } from "../domain/Limits.js"
import { WebhookUrl, WriteKey } from "../domain/Settings.js"
import { InvalidOptions } from "./ClientErrors.js"
import type { Outcome } from "./Outcome.js"

/** What to do with a call when `maxQueueSize` messages are already queued. */
export type Overflow = "drop" | "backpressure"

/** Options of the client (SPEC §9). Only `writeKey` is required. */
export interface AnalyticsOptions {
  /** The source's write key, sent as the Basic auth user name. Required. */
  readonly writeKey: string
  /** Base URL of the hookrelay server; batches go to `{endpoint}/v1/batch`. Default `http://localhost:8080`. */
  readonly endpoint?: string | undefined
  /** Send a batch as soon as this many messages are queued (1 to 2 500; 1 sends every message alone). Default 20. */
  readonly flushAt?: number | undefined
  /** Alias of `flushAt` (the name other Segment libraries use). Give one or the other. */
  readonly size?: number | undefined
  /** Send what is queued when this much time has passed since the last batch: milliseconds or a `Duration` ("5 seconds"). Default 5 s. */
  readonly flushAfter?: Duration.DurationInput | undefined
  /** At most this many messages wait in the queue. Default 10 000. */
  readonly maxQueueSize?: number | undefined
  /**
   * When the queue is full: `"drop"` (default) refuses the new message without failing the call
   * and reports it as a `Dropped` outcome (and in the `DEBUG=analytics` log); `"backpressure"`
   * makes the call wait until there is room (for imports that must not lose anything).
   */
  readonly overflow?: Overflow | undefined
  /** Retries of a batch after a 5xx, 429, timeout or network error (0 to 20). Default 3: at most 4 attempts. */
  readonly maxRetries?: number | undefined
  /** Time allowed for one request, from its start to its answer's end: milliseconds or a `Duration`. Default 10 s. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Batches being sent at the same time (1 to 64). Default 4. */
  readonly maxInFlight?: number | undefined
  /**
   * Called synchronously with every {@link Outcome}: each batch's success or failure, each
   * dropped message, and each refused call (`Refused`: invalid with the field named, too large,
   * or made after close). The one place where calls that nobody awaits show their errors. It
   * must not throw (an exception is caught and logged under `DEBUG=analytics`).
   */
  readonly onOutcome?: ((outcome: Outcome) => void) | undefined
}

/** The options with their defaults applied and their values checked. */
export interface ResolvedOptions {
  readonly writeKey: string
  readonly endpoint: string
  readonly batchUrl: string
  readonly flushAt: number
  readonly flushAfter: Duration.Duration
  readonly maxQueueSize: number
  readonly overflow: Overflow
  readonly maxRetries: number
  readonly timeout: Duration.Duration
  readonly maxInFlight: number
  readonly onOutcome: ((outcome: Outcome) => void) | undefined
}

/** The defaults of SPEC §9. */
export const defaults = {
  endpoint: "http://localhost:8080",
  flushAt: 20,
  flushAfter: Duration.seconds(5),
  maxQueueSize: 10_000,
  overflow: "drop",
  maxRetries: 3,
  timeout: Duration.seconds(10),
  maxInFlight: 4
} as const

const digits = /^\d+$/

/** Milliseconds as a number (or a string of digits, as environment variables hold them), or anything `Duration.decode` reads. */
const toDuration = (input: unknown): Duration.Duration | undefined => {
  if (typeof input === "number") return Number.isFinite(input) ? Duration.millis(input) : undefined
  if (typeof input === "string" && digits.test(input.trim())) return Duration.millis(Number(input.trim()))
  return Option.getOrUndefined(Duration.decodeUnknown(input))
}

const PositiveDuration = Schema.Unknown.pipe(
  Schema.filter((input) => {
    const duration = toDuration(input)
    return (duration !== undefined && Duration.toMillis(duration) >= 1) ||
      "must be a duration of at least 1 millisecond (milliseconds, or a string such as \"5 seconds\")"
  })
)

const intBetween = (min: number, max: number) =>
  Schema.Number.pipe(
    Schema.filter((value) =>
      (Number.isInteger(value) && value >= min && value <= max) || `must be an integer from ${min} to ${max}`
    )
  ).annotations({ message: () => `must be an integer from ${min} to ${max}` })

const optional = <A, I>(schema: Schema.Schema<A, I, never>) => Schema.optional(schema)

const OptionsSchema = Schema.Struct({
  writeKey: WriteKey.annotations({ message: () => "is required: a non-empty string without white space or ':'" }),
  endpoint: optional(WebhookUrl),
  flushAt: optional(intBetween(1, maxBatchMessages)),
  size: optional(intBetween(1, maxBatchMessages)),
  flushAfter: optional(PositiveDuration),
  maxQueueSize: optional(intBetween(1, 10_000_000)),
  overflow: optional(
    Schema.Literal("drop", "backpressure").annotations({
      message: () => "must be \"drop\" or \"backpressure\""
    })
  ),
  maxRetries: optional(intBetween(0, 20)),
  timeout: optional(PositiveDuration),
  maxInFlight: optional(intBetween(1, 64)),
  onOutcome: optional(
    Schema.declare((input: unknown): input is (outcome: Outcome) => void => typeof input === "function", {
      message: () => "must be a function"
    })
  )
})

// Unknown keys are refused: `flushInterval` or `host` (analytics-node's names) would otherwise be
// ignored without a word.
const decodeOptions = Schema.decodeUnknownEither(OptionsSchema, { errors: "all", onExcessProperty: "error" })

// An optional option is `X | undefined`: a bad value fails both members; say it once, as X's rule.
const firstPerPath = (issues: ReadonlyArray<FieldIssue>): ReadonlyArray<FieldIssue> =>
  issues.filter((issue, index) => issues.findIndex((other) => other.path === issue.path) === index)

const withoutTrailingSlashes = (url: string): string => url.replace(/\/+$/, "")

/** Checks the options and applies the defaults. */
export const resolveOptions = (input: unknown): Either.Either<ResolvedOptions, InvalidOptions> => {
  const decoded = decodeOptions(input)
  if (Either.isLeft(decoded)) {
    return Either.left(new InvalidOptions({ issues: firstPerPath(issuesFromParseError(decoded.left)) }))
  }
  const options = decoded.right
  if (options.flushAt !== undefined && options.size !== undefined && options.flushAt !== options.size) {
    const issue: FieldIssue = { path: "size", message: "is an alias of flushAt: give one of them, not both" }
    return Either.left(new InvalidOptions({ issues: [issue] }))
  }
  const endpoint = withoutTrailingSlashes(options.endpoint ?? defaults.endpoint)
  return Either.right({
    writeKey: options.writeKey,
    endpoint,
    batchUrl: `${endpoint}/v1/batch`,
    flushAt: options.flushAt ?? options.size ?? defaults.flushAt,
    flushAfter: toDuration(options.flushAfter) ?? defaults.flushAfter,
    maxQueueSize: options.maxQueueSize ?? defaults.maxQueueSize,
    overflow: options.overflow ?? defaults.overflow,
    maxRetries: options.maxRetries ?? defaults.maxRetries,
    timeout: toDuration(options.timeout) ?? defaults.timeout,
    maxInFlight: options.maxInFlight ?? defaults.maxInFlight,
    onOutcome: options.onOutcome
  })
}

/**
 * The environment variables read by `layerConfig`; each maps to the option of the same meaning.
 * Durations are milliseconds or strings such as `"5 seconds"`.
 */
export const environmentVariables = {
  writeKey: "HOOKRELAY_WRITE_KEY",
  endpoint: "HOOKRELAY_ENDPOINT",
  flushAt: "HOOKRELAY_FLUSH_AT",
  flushAfter: "HOOKRELAY_FLUSH_AFTER",
  maxQueueSize: "HOOKRELAY_MAX_QUEUE_SIZE",
  overflow: "HOOKRELAY_OVERFLOW",
  maxRetries: "HOOKRELAY_MAX_RETRIES",
  timeout: "HOOKRELAY_TIMEOUT",
  maxInFlight: "HOOKRELAY_MAX_IN_FLIGHT"
} as const

const optionalString = (name: string) => Config.option(Config.string(name))
const optionalInteger = (name: string) => Config.option(Config.integer(name))

/** The options found in the environment (see {@link environmentVariables}); absent variables are left out. */
export const optionsConfig: Config.Config<Partial<AnalyticsOptions>> = Config.all({
  writeKey: Config.option(Config.redacted(environmentVariables.writeKey)),
  endpoint: optionalString(environmentVariables.endpoint),
  flushAt: optionalInteger(environmentVariables.flushAt),
  flushAfter: optionalString(environmentVariables.flushAfter),
  maxQueueSize: optionalInteger(environmentVariables.maxQueueSize),
  overflow: Config.option(Config.literal("drop", "backpressure")(environmentVariables.overflow)),
  maxRetries: optionalInteger(environmentVariables.maxRetries),
  timeout: optionalString(environmentVariables.timeout),
  maxInFlight: optionalInteger(environmentVariables.maxInFlight)
}).pipe(
  Config.map((values) => {
    const present: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(values) as Array<[string, Option.Option<unknown>]>) {
      if (Option.isNone(value)) continue
      present[key] = Redacted.isRedacted(value.value) ? Redacted.value(value.value) : value.value
    }
    return present
  })
)
