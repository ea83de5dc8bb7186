import { Cause, Duration, Effect, Pull, Schedule } from "effect"
import { retryWindowMillis, timeoutMillis } from "../domain/DestinationTiming.js"
import { signingSecret } from "../domain/Settings.js"
import type { WebhookSettings } from "../domain/Settings.js"
import { signsSegment } from "../domain/Signing.js"
import { attemptWith, prepareEndpoint } from "./Attempt.js"
import type { AttemptInput, AttemptServices, AttemptSink, EndpointPermits, PreparedEndpoint } from "./Attempt.js"
import { AttemptOutcome } from "./AttemptOutcome.js"
import type { Retryable } from "./AttemptOutcome.js"
import { AllEndpointsFailed, DeliveryResult, EndpointState } from "./DeliveryResult.js"
import type { Delivered, Pending, Retired } from "./DeliveryResult.js"
import type { EndpointGuard, Pass } from "./EndpointGuard.js"
import { deadline, retryPolicy } from "./RetryPolicy.js"
import type { RetryPolicyOptions } from "./RetryPolicy.js"
import { signatureFor } from "./Signature.js"
import { standardStamp } from "./StandardSigning.js"
import type { StandardStamp } from "./StandardSigning.js"
import { Transport } from "./Transport.js"

/** One message to deliver to a destination's URLs. */
export interface DeliveryJob {
  readonly jobId: string
  readonly messageId: string
  /** The serialized body (`encodeBody`): these exact bytes are signed and sent. */
  readonly body: Uint8Array
  /** The destination's settings; `enabled`, subscriptions and filters are routing's business and are not read here. */
  readonly settings: Pick<
    WebhookSettings,
    | "sharedSecret"
    | "endpoints"
    | "signing"
    | "signingSecrets"
    | "asymmetric"
    | "signingKey"
    | "retryWindow"
    | "timeout"
  >
  /** Epoch ms of the job's first attempt, persisted: the retry window counts from it. Default: now (a new job). */
  readonly firstAttemptAt?: number | undefined
  /**
   * Where each URL stood after an earlier run (`Deferred.endpoints`, or rebuilt from the store after a restart):
   * `Pending` URLs continue with their attempt count and backoff, `Retired` ones are not tried again. Matched by URL;
   * URLs without a state start fresh, states of URLs no longer configured are dropped.
   */
  readonly endpointStates?: ReadonlyArray<EndpointState> | undefined
  /** The W3C `traceparent` of the request that made the job, if it was traced: each attempt's span is its child. */
  readonly traceparent?: string | undefined
}

export interface DeliverOptions {
  /** Receives every attempt as it ends. Default: drop them. */
  readonly recordAttempt?: AttemptSink | undefined
  /**
   * The longest wait to spend asleep in memory before a retry. A URL whose next attempt is further away stops as
   * `Pending`, and when no URL succeeds the job ends `Deferred` instead of holding a fiber for minutes. Default:
   * infinity (always wait inline).
   */
  readonly maxInlineDelay?: Duration.Input | undefined
  /** Backoff and window overrides; REFERENCE §4's values, and the destination's `retryWindow`, by default. */
  readonly policy?: Omit<RetryPolicyOptions, "firstAttemptAt" | "priorAttempts"> | undefined
  /**
   * The concurrency limit of each URL, taken around each attempt on it: the dispatcher's per-endpoint limit. Time
   * spent waiting for it is neither an attempt nor part of one (an attempt starts, and is recorded, once it may run).
   */
  readonly gate?: EndpointGateFor | undefined
}

/**
 * What each attempt on one URL passes: its concurrency limit and, in the dispatcher, its guard (circuit breaker, rate
 * limit, health counters), which may hold the attempt and is told every outcome.
 */
export interface EndpointGate {
  readonly permits: EndpointPermits
  readonly guard?: EndpointGuard | undefined
}

export type EndpointGateFor = (url: string) => EndpointGate

// How a URL's run ends when its guard never lets it go: the job's window ended while held, or the URL was disabled.
const unavailable = AttemptOutcome.Retryable({ reason: "endpoint unavailable" })
const disabledEndpoint = AttemptOutcome.Permanent({ reason: "endpoint disabled" })

const noRecord: AttemptSink = () => Effect.void

interface JobContext {
  readonly services: AttemptServices
  readonly job: DeliveryJob
  readonly firstAttemptAt: number
  readonly lastStart: number
  readonly maxInlineMillis: number
  readonly record: AttemptSink
  /** The backoff, with the window the job is retried in (the option's, else the destination's). */
  readonly policy: Omit<RetryPolicyOptions, "firstAttemptAt" | "priorAttempts">
  readonly gate: EndpointGateFor | undefined
  /** The Standard Webhooks headers of each attempt; undefined when the source does not send them. */
  readonly stamp: StandardStamp | undefined
}

// The constructors once: each property read of a `Data.taggedEnum` makes a new one, and this is every delivery's path.
const delivered = DeliveryResult.Delivered
const retired = EndpointState.Retired
const pendingState = EndpointState.Pending

const withOutcome = (lastOutcome: AttemptOutcome | undefined) => lastOutcome === undefined ? {} : { lastOutcome }

/**
 * One URL: attempt, then retry under `retryPolicy` until a success (the fiber's success), a permanent failure or the
 * end of the window (`Retired`), or a wait longer than `maxInlineDelay` (`Pending`) — the latter two as failures, so
 * that `raceAll` keeps waiting for the other URLs. The schedule decides every retry: its step plans the next instant,
 * on Clock, and a stop (the window's end) or a planned wait past `maxInlineDelay` (a deferral) ends the run.
 * Reads the clock when called: built where the URL's run starts.
 */
const runEndpoint = (
  context: JobContext,
  endpoint: PreparedEndpoint,
  prior: Pending | undefined
): Effect.Effect<Delivered, Pending | Retired> => {
  const { clock } = context.services
  let attempts = prior?.attempts ?? 0
  let lastOutcome = prior?.lastOutcome
  // The start of the next attempt as the policy planned it; undefined once the policy has stopped (out of window).
  let plannedAt: number | undefined
  const retire = (why: Retired["why"]) => retired({ url: endpoint.url, attempts, why, ...withOutcome(lastOutcome) })
  const pending = (nextAttemptAt: number) =>
    pendingState({ url: endpoint.url, attempts, nextAttemptAt, ...withOutcome(lastOutcome) })
  const stopped = () => Effect.fail(plannedAt === undefined ? retire("out-of-window") : pending(plannedAt))

  // Called by the attempt once it may start: the attempt is counted then.
  const input = (): AttemptInput => {
    attempts += 1
    return {
      jobId: context.job.jobId,
      messageId: context.job.messageId,
      // Standard Webhooks: a timestamp (and signatures) of this attempt's own time, the same webhook-id every time.
      endpoint: context.stamp === undefined ? endpoint : context.stamp(endpoint, clock.currentTimeMillisUnsafe()),
      attemptNumber: attempts,
      record: context.record,
      trace: undefined
    }
  }
  const gate = context.gate?.(endpoint.url)
  const guard = gate?.guard
  const { traceAttempt } = context.services
  const attempt = attemptWith(
    context.services,
    gate?.permits,
    traceAttempt === undefined ? input : () => traceAttempt(input(), context.job.traceparent)
  )
  // Whether the attempt in hand is the open circuit's probe: its outcome (or its interruption) decides the circuit.
  let probe = false
  const passed = (pass: Pass): Effect.Effect<AttemptOutcome, Retired> => {
    probe = pass === "probe"
    switch (pass) {
      case "go":
        return attempt
      case "probe":
        return Effect.onInterrupt(attempt, () => Effect.sync(() => guard!.probeAborted()))
      case "unavailable":
        lastOutcome = unavailable
        return Effect.fail(retire("out-of-window"))
      case "disabled":
        lastOutcome = disabledEndpoint
        return Effect.fail(retire("permanent"))
    }
  }
  // A held attempt waits here, before its permit: neither an attempt nor part of one, its window still running.
  const once: Effect.Effect<AttemptOutcome, Retired> = guard === undefined ? attempt : Effect.suspend(() => {
    if (!guard.tryPass()) return Effect.flatMap(guard.pass(context.lastStart), passed)
    probe = false
    return attempt
  })

  // Effect.retry's loop, entered with the failure already in hand (the first attempt is not repeated). The schedule
  // is built at the first retryable failure: most deliveries succeed at once and never need it.
  const retrying = (first: Retryable) =>
    Effect.flatMap(
      Schedule.toStep(
        retryPolicy({ ...context.policy, firstAttemptAt: context.firstAttemptAt, priorAttempts: attempts - 1 })
      ),
      (step) => {
        const next = (failed: Retryable): Effect.Effect<Delivered, Pending | Retired> =>
          Effect.suspend(() => {
            const now = clock.currentTimeMillisUnsafe()
            return Pull.matchEffect(step(now, failed), {
              onSuccess: ([, delay]) => {
                const millis = Duration.toMillis(delay)
                plannedAt = now + millis
                if (millis > context.maxInlineMillis) return stopped()
                return Effect.andThen(Effect.sleep(delay), Effect.flatMap(once, (outcome) => decide(outcome, next)))
              },
              onDone: () => {
                plannedAt = undefined
                return stopped()
              },
              onFailure: Effect.failCause
            })
          })
        return next(first)
      }
    )

  // How an attempt's outcome ends the URL's run, or goes on retrying.
  const decide = (
    outcome: AttemptOutcome,
    retry: (failed: Retryable) => Effect.Effect<Delivered, Pending | Retired>
  ): Effect.Effect<Delivered, Pending | Retired> => {
    lastOutcome = outcome
    guard?.report(outcome, probe)
    switch (outcome._tag) {
      case "Success":
        return Effect.succeed(delivered({ url: endpoint.url, status: outcome.status, attempts }))
      case "Permanent":
        return Effect.fail(retire("permanent"))
      case "Retryable":
        return retry(outcome)
    }
  }

  // A resumed URL starts at the time its schedule had planned; the window is checked against the planned start,
  // not the timer's punctuality (REFERENCE §4: no attempt after first + 4 h).
  const now = clock.currentTimeMillisUnsafe()
  const startAt = Math.max(now, prior?.nextAttemptAt ?? 0)
  if (startAt > context.lastStart) return Effect.fail(retire("out-of-window"))
  if (startAt - now > context.maxInlineMillis) return Effect.fail(pending(startAt))
  const run = Effect.flatMap(once, (outcome) => decide(outcome, retrying))
  return startAt > now ? Effect.andThen(Effect.sleep(startAt - now), run) : run
}

const jobContext = (
  services: AttemptServices,
  job: DeliveryJob,
  options: DeliverOptions,
  now: number
): JobContext => {
  const firstAttemptAt = job.firstAttemptAt ?? now
  const window = options.policy?.window ?? retryWindowMillis(job.settings)
  return {
    services,
    job,
    firstAttemptAt,
    lastStart: deadline(firstAttemptAt, window),
    maxInlineMillis: Duration.toMillis(Duration.fromInputUnsafe(options.maxInlineDelay ?? Duration.infinity)),
    record: options.recordAttempt ?? noRecord,
    policy: options.policy === undefined ? { window } : { ...options.policy, window },
    gate: options.gate,
    stamp: standardStamp(job.settings, job.messageId, job.body)
  }
}

/** No URL succeeded: deferred while any URL is pending, dead otherwise. */
const conclude = (
  context: JobContext,
  states: ReadonlyArray<EndpointState>
): Effect.Effect<DeliveryResult, AllEndpointsFailed> => {
  let nextAttemptAt = Infinity
  for (const state of states) {
    if (state._tag === "Pending" && state.nextAttemptAt < nextAttemptAt) nextAttemptAt = state.nextAttemptAt
  }
  if (nextAttemptAt !== Infinity) {
    return Effect.succeed(
      DeliveryResult.Deferred({ nextAttemptAt, firstAttemptAt: context.firstAttemptAt, endpoints: states })
    )
  }
  return Effect.fail(
    new AllEndpointsFailed({
      jobId: context.job.jobId,
      messageId: context.job.messageId,
      firstAttemptAt: context.firstAttemptAt,
      endpoints: states.filter((state): state is Retired => state._tag === "Retired")
    })
  )
}

/**
 * Delivers one job (REFERENCE §4): signs the body once (`X-Signature`; the Standard Webhooks headers at each attempt),
 * then runs one fiber per URL — each attempting and retrying under `retryPolicy` — and races them: the first success
 * interrupts the others, whose in-flight requests are aborted. Succeeds with `Delivered`, or `Deferred` (see
 * `maxInlineDelay`); fails with `AllEndpointsFailed` when every URL is retired. With a single URL to run there is no
 * race and no fork.
 */
export const deliver = (
  job: DeliveryJob,
  options: DeliverOptions = {}
): Effect.Effect<DeliveryResult, AllEndpointsFailed, Transport> =>
  Effect.flatMap(Transport, (transport) => Effect.clockWith((clock) => deliverWith({ transport, clock }, job, options)))

/**
 * `deliver` with its services in hand (the dispatcher looks them up once, not per job). It reads the clock when
 * called, so it is called where the delivery starts: inside a `suspend`, or a fiber's step.
 */
export const deliverWith = (
  services: AttemptServices,
  job: DeliveryJob,
  options: DeliverOptions = {}
): Effect.Effect<DeliveryResult, AllEndpointsFailed> => {
  const context = jobContext(services, job, options, services.clock.currentTimeMillisUnsafe())
  const signature = signsSegment(job.settings) ? signatureFor(signingSecret(job.settings), job.body) : undefined
  const timeout = job.settings.timeout === undefined ? undefined : timeoutMillis(job.settings)
  const priorStates = job.endpointStates ?? []

  // One URL (the common case): no race, no state bookkeeping, the URL's own failure is the conclusion's input.
  if (job.settings.endpoints.length === 1) {
    const endpoint = job.settings.endpoints[0]!
    const prior = priorStates.find((state) => state.url === endpoint.url)
    if (prior?._tag === "Retired") return conclude(context, [prior])
    return Effect.catch(
      runEndpoint(context, prepareEndpoint(endpoint, job.body, signature, timeout), prior),
      (state) => conclude(context, [state])
    )
  }

  // states[i] is endpoint i's final state; runs are the endpoints still to try, by index.
  const states: Array<EndpointState | undefined> = []
  const runs: Array<Effect.Effect<Delivered, Pending | Retired>> = []
  job.settings.endpoints.forEach((endpoint, index) => {
    const prior = priorStates.find((state) => state.url === endpoint.url)
    if (prior?._tag === "Retired") {
      states[index] = prior
      return
    }
    states[index] = undefined
    runs.push(
      runEndpoint(context, prepareEndpoint(endpoint, job.body, signature, timeout), prior).pipe(
        Effect.tapError((state) => Effect.sync(() => (states[index] = state)))
      )
    )
  })

  if (runs.length === 0) return conclude(context, states as Array<EndpointState>)
  const race = runs.length === 1 ? runs[0]! : Effect.raceAll(runs)
  return race.pipe(
    Effect.catchCause((cause) =>
      // Every run failed with its state: decide. Anything else (a defect) is not ours to turn into a state.
      states.every((state) => state !== undefined)
        ? conclude(context, states)
        : Effect.failCause(Cause.fromReasons(cause.reasons.filter((reason) => !Cause.isFailReason(reason))))
    )
  )
}
