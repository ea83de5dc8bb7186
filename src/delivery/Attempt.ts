import { Clock, Effect, Either } from "effect"
import type { Endpoint } from "../domain/Settings.js"
import { classifyError, classifyResponse, timedOut } from "./AttemptOutcome.js"
import type { AttemptOutcome, Permanent, Retryable } from "./AttemptOutcome.js"
import type { AttemptRecord, AttemptSink } from "./AttemptRecord.js"
import { signatureHeader } from "./Signature.js"
import { requestTarget, Transport } from "./Transport.js"

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

/** An endpoint ready to post to: URL split once and headers built once per job, not per attempt. */
export interface PreparedEndpoint {
  readonly url: string
  readonly origin: string
  readonly path: string
  readonly headers: ReadonlyArray<string>
}

export const prepareEndpoint = (endpoint: Endpoint, signature: string | undefined): PreparedEndpoint => ({
  url: endpoint.url,
  ...requestTarget(endpoint.url),
  headers: requestHeaders(endpoint, signature)
})

export interface AttemptInput {
  readonly jobId: string
  readonly messageId: string
  /** The exact bytes that were signed. */
  readonly body: Uint8Array
  readonly endpoint: PreparedEndpoint
  /** 1-based, per URL, counted across restarts. */
  readonly attemptNumber: number
  readonly record: AttemptSink
}

/**
 * One attempt: POST, classify, record. Never fails: every ending is an `AttemptOutcome`, and every attempt — an
 * interrupted one included — goes to the sink. A timeout is logged with the message id, URL and attempt number.
 */
export const attempt = (input: AttemptInput): Effect.Effect<AttemptOutcome, never, Transport> =>
  Effect.gen(function*() {
    const transport = yield* Transport
    const { endpoint } = input
    const startedAt = yield* Clock.currentTimeMillis
    const base = { jobId: input.jobId, url: endpoint.url, attemptNumber: input.attemptNumber, startedAt }

    const result = yield* transport.post({
      origin: endpoint.origin,
      path: endpoint.path,
      headers: endpoint.headers,
      body: input.body
    }).pipe(
      Effect.either,
      Effect.onInterrupt(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          input.record({
            ...base,
            durationMs: now - startedAt,
            outcome: "Aborted",
            error: "aborted: the attempt was interrupted before it finished"
          }))
      )
    )
    const finishedAt = yield* Clock.currentTimeMillis
    const durationMs = finishedAt - startedAt

    if (Either.isRight(result)) {
      const response = result.right
      const outcome = classifyResponse(response, finishedAt)
      yield* input.record({
        ...base,
        durationMs,
        outcome: outcome._tag,
        status: response.status,
        responseSnippet: response.snippet
      })
      return outcome
    }

    const failure = result.left
    let outcome: Retryable | Permanent
    if (failure._tag === "TransportTimeout") {
      outcome = timedOut(failure.message)
      yield* Effect.logWarning(`delivery attempt timed out: ${failure.message}`).pipe(
        Effect.annotateLogs({
          messageId: input.messageId,
          url: endpoint.url,
          attempt: input.attemptNumber,
          jobId: input.jobId
        })
      )
    } else {
      outcome = classifyError(failure.code, failure.message)
    }
    const record: AttemptRecord = {
      ...base,
      durationMs,
      outcome: outcome._tag,
      error: outcome.reason
    }
    yield* input.record(record)
    return outcome
  })
