import { Cause, Effect } from "effect"
import type { Clock } from "effect"
import type { AttemptRecord } from "../domain/AttemptRecord.js"
import type { Endpoint } from "../domain/Settings.js"
import { classifyError, classifyResponse, timedOut } from "./AttemptOutcome.js"
import type { AttemptOutcome } from "./AttemptOutcome.js"
import { signatureHeader } from "./Signature.js"
import { requestTarget, Transport } from "./Transport.js"
import type {
  Started,
  TransportFailure,
  TransportRequest,
  TransportResponse,
  TransportShape,
  TransportTimeout
} from "./Transport.js"

export const userAgent = "hookrelay/1.0"

/**
 * The headers of every request to one endpoint, in the order REFERENCE §4 gives: `User-Agent`, `Content-Type`,
 * `X-Signature` (only with a signature), then the endpoint's static headers. Flat `[name, value, …]`, undici's cheapest
 * form. Settings validation already refuses static headers that would override ours.
 */
export const requestHeaders = (endpoint: Endpoint, signature: string | undefined): Array<string> => {
  const headers = ["User-Agent", userAgent, "Content-Type", "application/json"]
  if (signature !== undefined) headers.push(signatureHeader, signature)
  for (const [name, value] of Object.entries(endpoint.headers ?? {})) headers.push(name, value)
  return headers
}

/** An endpoint ready to post to: URL split, headers built and request assembled once per job, not per attempt. */
export interface PreparedEndpoint {
  readonly url: string
  readonly request: TransportRequest
}

/** What every request to one configured endpoint shares: its URL split and its headers without a signature. */
interface EndpointTemplate {
  readonly origin: string
  readonly path: string
  readonly headers: ReadonlyArray<string>
}

// Per endpoint object (settings are read once per claim and shared by its jobs): no URL parse or header list per job.
const templates = new WeakMap<Endpoint, EndpointTemplate>()

const templateOf = (endpoint: Endpoint): EndpointTemplate => {
  let template = templates.get(endpoint)
  if (template === undefined) {
    template = { ...requestTarget(endpoint.url), headers: requestHeaders(endpoint, undefined) }
    templates.set(endpoint, template)
  }
  return template
}

/** `body` is the exact bytes `signature` was computed over; `timeoutMillis`, the destination's deadline if it sets one. */
export const prepareEndpoint = (
  endpoint: Endpoint,
  body: Uint8Array,
  signature: string | undefined,
  timeoutMillis?: number
): PreparedEndpoint => {
  const template = templateOf(endpoint)
  return {
    url: endpoint.url,
    request: {
      origin: template.origin,
      path: template.path,
      // Without a signature the shared list is sent as is (the transport never changes it).
      headers: signature === undefined ? template.headers : requestHeaders(endpoint, signature),
      body,
      timeoutMillis
    }
  }
}

/** The request with a W3C `traceparent` header (telemetry on), for the receiver's trace to join the producer's. */
export const withTraceparent = (endpoint: PreparedEndpoint, traceparent: string): PreparedEndpoint => {
  const request = endpoint.request
  const base = request.headers
  // Allocated at its final length and filled: a spread literal reserves room to grow (more memory for a signed
  // request's list, and slower), and `concat` with non-array arguments takes V8's slow path.
  const headers = new Array<string>(base.length + 2)
  for (let i = 0; i < base.length; i++) headers[i] = base[i]!
  headers[base.length] = "traceparent"
  headers[base.length + 1] = traceparent
  // A literal keeps the request's shape.
  return {
    url: endpoint.url,
    request: {
      origin: request.origin,
      path: request.path,
      headers,
      body: request.body,
      timeoutMillis: request.timeoutMillis
    }
  }
}

/**
 * Where attempts go as they finish, each as the domain's record (REFERENCE §4: every attempt is recorded); the store
 * persists them in batches. It should not block for long.
 */
export type AttemptSink = (record: AttemptRecord) => Effect.Effect<void>

export interface AttemptInput {
  readonly jobId: string
  readonly messageId: string
  readonly endpoint: PreparedEndpoint
  /** 1-based, per URL, counted across restarts. */
  readonly attemptNumber: number
  readonly record: AttemptSink
  /** Telemetry on: the attempt's span, told how it ended before it is recorded (`DeliveryTracing.attempt`). */
  readonly trace?: AttemptTrace | undefined
}

/** The end of an attempt's span, as telemetry gives it to the attempt (`DeliveryTracing`). */
export interface AttemptTrace {
  readonly ended: (record: AttemptRecord) => void
}

/** Records an attempt, ending its span first if it has one. */
const recordAttempt = (input: AttemptInput, record: AttemptRecord) => {
  input.trace?.ended(record)
  return input.record(record)
}

const abortedError = "aborted: the attempt was interrupted before it finished"

/** A classification as the record names it; `aborted` has no classification (the attempt never ended on its own). */
const recordedOutcome = {
  Success: "success",
  Retryable: "retryable",
  Permanent: "permanent"
} as const satisfies Record<AttemptOutcome["_tag"], AttemptRecord["outcome"]>

// The records are literals of the domain record's every field in its order, absent parts `null`: one object shape
// for every attempt, answered or not, on its way to the store.

/** The record of an attempt that got an HTTP answer. */
const answered = (
  input: AttemptInput,
  startedAt: number,
  finishedAt: number,
  response: TransportResponse,
  outcome: AttemptOutcome
): AttemptRecord => ({
  jobId: input.jobId,
  url: input.endpoint.url,
  attempt: input.attemptNumber,
  startedAt,
  durationMs: finishedAt - startedAt,
  statusCode: response.status,
  error: null,
  outcome: recordedOutcome[outcome._tag],
  responseSnippet: response.snippet
})

/** The record of an attempt that ended without an answer (or was aborted). */
const unanswered = (
  input: AttemptInput,
  startedAt: number,
  finishedAt: number,
  outcome: AttemptRecord["outcome"],
  error: string
): AttemptRecord => ({
  jobId: input.jobId,
  url: input.endpoint.url,
  attempt: input.attemptNumber,
  startedAt,
  durationMs: finishedAt - startedAt,
  statusCode: null,
  error,
  outcome,
  responseSnippet: null
})

/** A timeout or a permanent failure, logged with the attempt it ended (retryable answers are only recorded). */
const logFailure = (input: AttemptInput, message: string) =>
  Effect.logWarning(message).pipe(
    Effect.annotateLogs({
      messageId: input.messageId,
      url: input.endpoint.url,
      attempt: input.attemptNumber,
      jobId: input.jobId
    })
  )

/** An attempt that got an answer or failed: how it is classified, and its record. */
interface Settled {
  readonly outcome: AttemptOutcome
  readonly record: AttemptRecord
  /** Set when the attempt hit the transport's deadline (it is logged). */
  readonly timeout: TransportTimeout | undefined
}

/** Classifies an answer and builds its record, without running anything. */
const answeredWith = (
  input: AttemptInput,
  startedAt: number,
  finishedAt: number,
  response: TransportResponse
): Settled => {
  const outcome = classifyResponse(response, finishedAt)
  return { outcome, record: answered(input, startedAt, finishedAt, response, outcome), timeout: undefined }
}

/** Classifies a failed request and builds its record. */
const failedWith = (input: AttemptInput, startedAt: number, finishedAt: number, error: TransportFailure): Settled => {
  const outcome = error._tag === "TransportTimeout" ? timedOut(error.message) : classifyError(error.code, error.message)
  return {
    outcome,
    record: unanswered(input, startedAt, finishedAt, recordedOutcome[outcome._tag], outcome.reason),
    timeout: error._tag === "TransportTimeout" ? error : undefined
  }
}

/** The record of an attempt cut off in flight: it may have reached the receiver, so it is recorded too. */
const abortedRecord = (input: AttemptInput, startedAt: number, finishedAt: number): AttemptRecord =>
  unanswered(input, startedAt, finishedAt, "aborted", abortedError)

/** Records a classified attempt (logging a timeout) and returns its outcome. */
const recorded = (input: AttemptInput, result: Settled): Effect.Effect<AttemptOutcome> => {
  const done = Effect.as(recordAttempt(input, result.record), result.outcome)
  if (result.timeout !== undefined) {
    return Effect.andThen(logFailure(input, `delivery attempt timed out: ${result.timeout.message}`), done)
  }
  return result.outcome._tag === "Permanent"
    ? Effect.andThen(logFailure(input, `delivery attempt failed permanently: ${result.outcome.reason}`), done)
    : done
}

/**
 * A request that ended without a failure of its own: interrupted (another URL won, the lease was lost, shutdown) or a
 * defect, which goes on ending the fiber. An interrupted request may have reached the receiver, so it is recorded as
 * aborted first.
 */
const cutOff = (
  input: AttemptInput,
  startedAt: number,
  finishedAt: number,
  cause: Cause.Cause<TransportFailure>
): Effect.Effect<AttemptOutcome> => {
  const failure = Cause.findErrorOption(cause)
  if (failure._tag === "Some") return recorded(input, failedWith(input, startedAt, finishedAt, failure.value))
  const other = cause as Cause.Cause<never>
  if (!Cause.hasInterrupts(other)) return Effect.failCause(other)
  return Effect.andThen(recordAttempt(input, abortedRecord(input, startedAt, finishedAt)), Effect.failCause(other))
}

/**
 * An endpoint's concurrency limit as the attempt takes it (`FifoGate` fits): a free permit is taken synchronously, a
 * queued wait is interruptible and leaves holding nothing; the holder gives the permit back once.
 */
export interface EndpointPermits {
  tryTake(): boolean
  readonly take: Effect.Effect<void>
  giveBack(): void
}

/** What an attempt runs with: looked up once (per job, or per dispatcher), not per attempt. */
export interface AttemptServices {
  readonly transport: TransportShape
  readonly clock: Clock.Clock
  /** Telemetry on: each attempt's input as its span wraps it (`DeliveryTracing.attempt`). Absent when off. */
  readonly traceAttempt?: ((input: AttemptInput, traceparent: string | undefined) => AttemptInput) | undefined
}

/**
 * One attempt with its services in hand: `input` is called once the attempt may start (its number is counted then),
 * after the endpoint's permit, if any, is held. The permit is taken and given back inside the attempt's one
 * uninterruptible region, so it cannot be lost between taking it and the request's end, and waiting for it is neither
 * an attempt nor part of one. Only the request itself (and the wait for a permit) is interruptible.
 */
export const attemptWith = (
  services: AttemptServices,
  permits: EndpointPermits | undefined,
  input: () => AttemptInput
): Effect.Effect<AttemptOutcome> =>
  Effect.uninterruptibleMask((restore) => {
    const run = (): Effect.Effect<AttemptOutcome> => {
      const current = input()
      const startedAt = services.clock.currentTimeMillisUnsafe()
      const { start } = services.transport
      let started: Started | undefined
      const request = start === undefined
        ? services.transport.post(current.endpoint.request)
        : Effect.callback<TransportResponse, TransportFailure>((resume) => {
          started = start(current.endpoint.request, resume)
        })
      return Effect.matchCauseEffect(restore(request), {
        onSuccess: (response) => {
          permits?.giveBack()
          const finishedAt = services.clock.currentTimeMillisUnsafe()
          return recorded(current, answeredWith(current, startedAt, finishedAt, response))
        },
        onFailure: (cause) => {
          // Interrupted while in flight: abort the request (a started one has no interruption hook of its own).
          started?.cancel()
          permits?.giveBack()
          return cutOff(current, startedAt, services.clock.currentTimeMillisUnsafe(), cause)
        }
      })
    }
    if (permits === undefined || permits.tryTake()) return run()
    return Effect.flatMap(restore(permits.take), run)
  })

/**
 * One attempt: POST, classify, record. Never fails: every ending is an `AttemptOutcome`, and every attempt — an
 * interrupted one included — goes to the sink. A timeout is logged with the message id, URL and attempt number.
 *
 * The hot path of delivery: one uninterruptible region around the request (interruptible inside) whose ending is
 * classified and recorded in one step, the services looked up by the caller, no generator: each combinator layer
 * costs about as much per attempt as the transport itself.
 */
export const attempt = (input: AttemptInput): Effect.Effect<AttemptOutcome, never, Transport> =>
  Effect.flatMap(
    Transport,
    (transport) => Effect.clockWith((clock) => attemptWith({ transport, clock }, undefined, () => input))
  )
