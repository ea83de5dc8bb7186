import { Cause, Effect } from "effect"
import type { Clock, Exit } from "effect"
import type { Endpoint } from "../domain/Settings.js"
import { classifyError, classifyResponse, timedOut } from "./AttemptOutcome.js"
import type { AttemptOutcome } from "./AttemptOutcome.js"
import type { AttemptRecord, AttemptSink } from "./AttemptRecord.js"
import { signatureHeader } from "./Signature.js"
import { requestTarget, Transport } from "./Transport.js"
import type { TransportFailure, TransportRequest, TransportResponse, TransportTimeout } from "./Transport.js"

export const userAgent = "hookrelay/1.0"

/**
 * The headers of every request to one endpoint, in the order SPEC §4 gives: `User-Agent`, `Content-Type`,
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

/** `body` is the exact bytes `signature` was computed over. */
export const prepareEndpoint = (
  endpoint: Endpoint,
  body: Uint8Array,
  signature: string | undefined
): PreparedEndpoint => {
  const template = templateOf(endpoint)
  return {
    url: endpoint.url,
    request: {
      origin: template.origin,
      path: template.path,
      // Without a signature the shared list is sent as is (the transport never changes it).
      headers: signature === undefined ? template.headers : requestHeaders(endpoint, signature),
      body
    }
  }
}

export interface AttemptInput {
  readonly jobId: string
  readonly messageId: string
  readonly endpoint: PreparedEndpoint
  /** 1-based, per URL, counted across restarts. */
  readonly attemptNumber: number
  readonly record: AttemptSink
}

const abortedError = "aborted: the attempt was interrupted before it finished"

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
  attemptNumber: input.attemptNumber,
  startedAt,
  durationMs: finishedAt - startedAt,
  outcome: outcome._tag,
  status: response.status,
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
  attemptNumber: input.attemptNumber,
  startedAt,
  durationMs: finishedAt - startedAt,
  outcome,
  error
})

const logTimeout = (input: AttemptInput, failure: TransportTimeout) =>
  Effect.logWarning(`delivery attempt timed out: ${failure.message}`).pipe(
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

/**
 * Classifies a request's ending and builds its record, without running anything. `undefined` for an exit without a
 * failure (an interruption or a defect).
 */
const settled = (
  input: AttemptInput,
  startedAt: number,
  finishedAt: number,
  exit: Exit.Exit<TransportResponse, TransportFailure>
): Settled | undefined => {
  if (exit._tag === "Success") {
    const outcome = classifyResponse(exit.value, finishedAt)
    return { outcome, record: answered(input, startedAt, finishedAt, exit.value, outcome), timeout: undefined }
  }
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "None") return undefined
  const error = failure.value
  const outcome = error._tag === "TransportTimeout" ? timedOut(error.message) : classifyError(error.code, error.message)
  return {
    outcome,
    record: unanswered(input, startedAt, finishedAt, outcome._tag, outcome.reason),
    timeout: error._tag === "TransportTimeout" ? error : undefined
  }
}

/** The record of an attempt cut off in flight: it may have reached the receiver, so it is recorded too. */
const abortedRecord = (input: AttemptInput, startedAt: number, finishedAt: number): AttemptRecord =>
  unanswered(input, startedAt, finishedAt, "Aborted", abortedError)

/** How an attempt ended, given what the transport did: classified, recorded, and the outcome returned. */
const settle = (
  input: AttemptInput,
  clock: Clock.Clock,
  startedAt: number,
  exit: Exit.Exit<TransportResponse, TransportFailure>
): Effect.Effect<AttemptOutcome> => {
  const finishedAt = clock.unsafeCurrentTimeMillis()
  const result = settled(input, startedAt, finishedAt, exit)
  if (result === undefined) {
    // No failure: interrupted (another URL won, the lease was lost, shutdown) or a defect, which goes on ending the
    // fiber. An interrupted request may have reached the receiver, so it is recorded as aborted first.
    const cause = (exit as Exit.Failure<TransportResponse, TransportFailure>).cause as Cause.Cause<never>
    if (!Cause.isInterrupted(cause)) return Effect.failCause(cause)
    return Effect.zipRight(input.record(abortedRecord(input, startedAt, finishedAt)), Effect.failCause(cause))
  }
  const recorded = Effect.as(input.record(result.record), result.outcome)
  return result.timeout === undefined ? recorded : Effect.zipRight(logTimeout(input, result.timeout), recorded)
}

/**
 * One attempt: POST, classify, record. Never fails: every ending is an `AttemptOutcome`, and every attempt — an
 * interrupted one included — goes to the sink. A timeout is logged with the message id, URL and attempt number.
 *
 * The hot path of delivery: one uninterruptible region around the request (interruptible inside) whose exit is
 * classified and recorded in one step, the Clock read directly, no generator (measured: each combinator layer costs
 * a few µs per attempt, as much as the transport itself).
 */
export const attempt = (input: AttemptInput): Effect.Effect<AttemptOutcome, never, Transport> =>
  Effect.flatMap(Transport, (transport) =>
    Effect.clockWith((clock) =>
      Effect.uninterruptibleMask((restore) => {
        const startedAt = clock.unsafeCurrentTimeMillis()
        return Effect.flatMap(
          Effect.exit(restore(transport.post(input.endpoint.request))),
          (exit) => settle(input, clock, startedAt, exit)
        )
      })
    ))
