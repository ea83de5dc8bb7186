import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaParser from "effect/SchemaParser"
import { type FieldIssue, issuesFromParseError } from "../domain/Issues.js"
import { maxBatchMessages, maxMessageBytes } from "../domain/Limits.js"
import { WebhookUrl, WriteKey } from "../domain/Settings.js"
import { InvalidOptions } from "./ClientErrors.js"
import type { Outcome } from "./Outcome.js"
import type { ClientStatus } from "./Status.js"

/** What to do with a call when the queue is full (`maxQueueSize` messages or `maxQueueBytes`). */
export type Overflow = "drop" | "backpressure"

/** With `overflow: "drop"`, which message goes when the queue is full: the oldest queued, or the new one. */
export type DropPolicy = "oldest" | "newest"

/** Options of the client (REFERENCE §9). Only `writeKey` is required. */
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
  readonly flushAfter?: Duration.Input | undefined
  /** At most this many messages wait in the queue. Default 100 000. */
  readonly maxQueueSize?: number | undefined
  /** At most this many bytes of encoded messages wait in the queue (at least 32 KiB). Default 64 MiB. */
  readonly maxQueueBytes?: number | undefined
  /**
   * When the queue is full: `"drop"` (default) makes room by dropping a message as `dropPolicy`
   * says, without failing the call, and reports it as a `Dropped` outcome (and in the
   * `DEBUG=analytics` log); `"backpressure"` makes the call wait until there is room (for imports
   * that must not lose anything).
   */
  readonly overflow?: Overflow | undefined
  /** With `overflow: "drop"`: drop the `"oldest"` queued message (default) or the `"newest"`, the call's own. */
  readonly dropPolicy?: DropPolicy | undefined
  /**
   * How long a message may wait to be delivered, from the moment it was queued, while the server
   * is unreachable or failing: milliseconds or a `Duration`. Past it, it is reported as a
   * `Failure` (`RetryForElapsed`). Default 10 minutes.
   */
  readonly retryFor?: Duration.Input | undefined
  /**
   * An optional cap (0 to 20) on a batch's own retries while the server is reachable. Attempts made
   * as probes during an outage do not count. Default: no cap (`retryFor` bounds the wait).
   */
  readonly maxRetries?: number | undefined
  /** Time allowed for one request, from its start to its answer's end: milliseconds or a `Duration`. Default 10 s. */
  readonly timeout?: Duration.Input | undefined
  /** Batches being sent at the same time (1 to 64). Default 4. */
  readonly maxInFlight?: number | undefined
  /**
   * Called synchronously with every {@link Outcome}: each batch's success or failure, each
   * dropped message, and each refused call (`Refused`: invalid with the field named, too large,
   * or made after close). The one place where calls that nobody awaits show their errors. It
   * must not throw (an exception is caught and logged under `DEBUG=analytics`).
   */
  readonly onOutcome?: ((outcome: Outcome) => void) | undefined
  /**
   * Called synchronously when the server becomes unreachable (`Unreachable`, with the error) and
   * when it is reachable again (`Reachable`, with the downtime and the messages held). It must
   * not throw.
   */
  readonly onStatus?: ((status: ClientStatus) => void) | undefined
  /**
   * How long closing may take to send what is queued: milliseconds or a `Duration`; what is still
   * queued then is reported as `Failure` (`Closed`). Default 30 s.
   */
  readonly closeTimeout?: Duration.Input | undefined
}

/** The options with their defaults applied and their values checked. */
export interface ResolvedOptions {
  readonly writeKey: string
  readonly endpoint: string
  readonly batchUrl: string
  readonly flushAt: number
  readonly flushAfter: Duration.Duration
  readonly maxQueueSize: number
  readonly maxQueueBytes: number
  readonly overflow: Overflow
  readonly dropPolicy: DropPolicy
  readonly retryFor: Duration.Duration
  /** `undefined`: no cap. */
  readonly maxRetries: number | undefined
  readonly timeout: Duration.Duration
  readonly maxInFlight: number
  readonly closeTimeout: Duration.Duration
  readonly onOutcome: ((outcome: Outcome) => void) | undefined
  readonly onStatus: ((status: ClientStatus) => void) | undefined
}

/** The defaults of REFERENCE §9. */
export const defaults = {
  endpoint: "http://localhost:8080",
  flushAt: 20,
  flushAfter: Duration.seconds(5),
  maxQueueSize: 100_000,
  maxQueueBytes: 64 * 1024 * 1024,
  overflow: "drop",
  dropPolicy: "oldest",
  retryFor: Duration.minutes(10),
  timeout: Duration.seconds(10),
  maxInFlight: 4,
  closeTimeout: Duration.seconds(30)
} as const

const digits = /^\d+$/

/** Milliseconds as a number (or a string of digits, as environment variables hold them), or anything `Duration.fromInput` reads. */
export const toDuration = (input: unknown): Duration.Duration | undefined => {
  if (typeof input === "number") return Number.isFinite(input) ? Duration.millis(input) : undefined
  if (typeof input === "string" && digits.test(input.trim())) return Duration.millis(Number(input.trim()))
  if (input === undefined || input === null) return undefined
  return Option.getOrUndefined(Duration.fromInput(input as Duration.Input))
}

const positiveDurationMessage =
  "must be a duration of at least 1 millisecond (milliseconds, or a string such as \"5 seconds\")"

const PositiveDuration = Schema.Unknown.check(Schema.makeFilter((input) => {
  const duration = toDuration(input)
  return (duration !== undefined && Duration.toMillis(duration) >= 1) || positiveDurationMessage
}))

// An option's own message stands for every way its value can be wrong (not a number, not an
// integer, out of range), as the one rule the caller has to follow.
const withMessage = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, message: string) => {
  const is = Schema.is(schema)
  return Schema.Unknown.annotate({ message }).pipe(
    Schema.refine((input): input is S["Type"] => is(input), { message })
  )
}

const intBetween = (min: number, max: number) =>
  withMessage(
    Schema.Number.check(Schema.makeFilter((value: number) => Number.isInteger(value) && value >= min && value <= max)),
    `must be an integer from ${min} to ${max}`
  )

const optional = Schema.optionalKey

const isFunction = (input: unknown): input is (value: never) => void => typeof input === "function"
const callback = Schema.declare(isFunction, { message: "must be a function" })

const OptionsSchema = Schema.Struct({
  writeKey: withMessage(WriteKey, "is required: a non-empty string without white space or ':'"),
  endpoint: optional(WebhookUrl),
  flushAt: optional(intBetween(1, maxBatchMessages)),
  size: optional(intBetween(1, maxBatchMessages)),
  flushAfter: optional(PositiveDuration),
  maxQueueSize: optional(intBetween(1, 10_000_000)),
  maxQueueBytes: optional(intBetween(maxMessageBytes, 2 ** 32)),
  overflow: optional(withMessage(Schema.Literals(["drop", "backpressure"]), "must be \"drop\" or \"backpressure\"")),
  dropPolicy: optional(withMessage(Schema.Literals(["oldest", "newest"]), "must be \"oldest\" or \"newest\"")),
  retryFor: optional(PositiveDuration),
  maxRetries: optional(intBetween(0, 20)),
  timeout: optional(PositiveDuration),
  maxInFlight: optional(intBetween(1, 64)),
  closeTimeout: optional(PositiveDuration),
  onOutcome: optional(callback),
  onStatus: optional(callback)
})

// Unknown keys are refused: `flushInterval` or `host` (analytics-node's names) would otherwise be
// ignored without a word.
const decodeOptions = SchemaParser.decodeUnknownResult(OptionsSchema, {
  errors: "all",
  reportInput: true,
  onExcessProperty: "error"
})

// One issue per option: the first is its rule.
const firstPerPath = (issues: ReadonlyArray<FieldIssue>): ReadonlyArray<FieldIssue> =>
  issues.filter((issue, index) => issues.findIndex((other) => other.path === issue.path) === index)

// An option given as `undefined` (the interface allows it) is one left out; an unknown key is kept, to be refused.
const withoutUndefined = (input: unknown): unknown => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input
  const present: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) {
    if (value !== undefined || !Object.hasOwn(OptionsSchema.fields, key)) present[key] = value
  }
  return present
}

const withoutTrailingSlashes = (url: string): string => url.replace(/\/+$/, "")

/** Checks the options and applies the defaults. */
export const resolveOptions = (input: unknown): Result.Result<ResolvedOptions, InvalidOptions> => {
  const decoded = decodeOptions(withoutUndefined(input))
  if (Result.isFailure(decoded)) {
    return Result.fail(new InvalidOptions({ issues: firstPerPath(issuesFromParseError(decoded.failure)) }))
  }
  const options = decoded.success
  if (options.flushAt !== undefined && options.size !== undefined && options.flushAt !== options.size) {
    const issue: FieldIssue = { path: "size", message: "is an alias of flushAt: give one of them, not both" }
    return Result.fail(new InvalidOptions({ issues: [issue] }))
  }
  const endpoint = withoutTrailingSlashes(options.endpoint ?? defaults.endpoint)
  return Result.succeed({
    writeKey: options.writeKey,
    endpoint,
    batchUrl: `${endpoint}/v1/batch`,
    flushAt: options.flushAt ?? options.size ?? defaults.flushAt,
    flushAfter: toDuration(options.flushAfter) ?? defaults.flushAfter,
    maxQueueSize: options.maxQueueSize ?? defaults.maxQueueSize,
    maxQueueBytes: options.maxQueueBytes ?? defaults.maxQueueBytes,
    overflow: options.overflow ?? defaults.overflow,
    dropPolicy: options.dropPolicy ?? defaults.dropPolicy,
    retryFor: toDuration(options.retryFor) ?? defaults.retryFor,
    maxRetries: options.maxRetries,
    timeout: toDuration(options.timeout) ?? defaults.timeout,
    maxInFlight: options.maxInFlight ?? defaults.maxInFlight,
    closeTimeout: toDuration(options.closeTimeout) ?? defaults.closeTimeout,
    onOutcome: options.onOutcome as ResolvedOptions["onOutcome"],
    onStatus: options.onStatus as ResolvedOptions["onStatus"]
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
  maxQueueBytes: "HOOKRELAY_MAX_QUEUE_BYTES",
  overflow: "HOOKRELAY_OVERFLOW",
  dropPolicy: "HOOKRELAY_DROP_POLICY",
  retryFor: "HOOKRELAY_RETRY_FOR",
  maxRetries: "HOOKRELAY_MAX_RETRIES",
  timeout: "HOOKRELAY_TIMEOUT",
  maxInFlight: "HOOKRELAY_MAX_IN_FLIGHT",
  closeTimeout: "HOOKRELAY_CLOSE_TIMEOUT"
} as const

const optionalString = (name: string) => Config.option(Config.String(name))
const optionalInteger = (name: string) => Config.option(Config.Int(name))

/** The options found in the environment (see {@link environmentVariables}); absent variables are left out. */
export const optionsConfig: Config.Config<Partial<AnalyticsOptions>> = Config.all({
  writeKey: Config.option(Config.Redacted(environmentVariables.writeKey)),
  endpoint: optionalString(environmentVariables.endpoint),
  flushAt: optionalInteger(environmentVariables.flushAt),
  flushAfter: optionalString(environmentVariables.flushAfter),
  maxQueueSize: optionalInteger(environmentVariables.maxQueueSize),
  maxQueueBytes: optionalInteger(environmentVariables.maxQueueBytes),
  overflow: Config.option(Config.Literals(["drop", "backpressure"], environmentVariables.overflow)),
  dropPolicy: Config.option(Config.Literals(["oldest", "newest"], environmentVariables.dropPolicy)),
  retryFor: optionalString(environmentVariables.retryFor),
  maxRetries: optionalInteger(environmentVariables.maxRetries),
  timeout: optionalString(environmentVariables.timeout),
  maxInFlight: optionalInteger(environmentVariables.maxInFlight),
  closeTimeout: optionalString(environmentVariables.closeTimeout)
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
