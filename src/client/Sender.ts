import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { formatTimestamp } from "../domain/Timestamp.js"
import type { BatchBody } from "./Batcher.js"
import { HttpError, RequestTimeout, type SendError, TransportError } from "./ClientErrors.js"
import { isRetryable, parseRetryAfter } from "./ClientRetry.js"
import type { TransportRequest, TransportResponse, TransportShape } from "./ClientTransport.js"
import type { DebugLog } from "./Debug.js"
import type { ResolvedOptions } from "./Options.js"
import type { Outage, Turn } from "./Outage.js"
import { type FailureReason, Outcome, type OutgoingMessage } from "./Outcome.js"
import { version } from "./version.js"

/** Where outcomes go; building one is skipped when nobody observes them. Counts are kept either way. */
export interface OutcomeSink {
  readonly observed: () => boolean
  readonly report: (outcome: Outcome) => Effect.Effect<void>
  /** `count` queued messages were delivered, or failed for good. */
  readonly delivered: (count: number) => void
  readonly failed: (count: number) => void
}

/** The error a `Failure` carries when no attempt failed (the messages waited past `retryFor`, or close timed out, before any). */
export const notSent = (reason: string): TransportError =>
  new TransportError({ reason, code: "NOT_SENT", retryable: false })

const parse = (json: string): OutgoingMessage => JSON.parse(json) as OutgoingMessage

/** What one batch went through: its attempts, its last error, and whether its outcome was reported. */
interface Progress {
  attempts: number
  /** Retryable failures of attempts made while the server was reachable (for `maxRetries`). */
  failures: number
  lastError: SendError | undefined
  reported: boolean
}

/**
 * Sends batches to `POST {endpoint}/v1/batch` and reports their outcomes. During an outage (see
 * `Outage`) a batch waits for its turn; its messages that waited longer than `retryFor` since
 * their call are taken out and reported failed before each attempt. Never fails. The body's buffer
 * is read until the returned effect ends (outcomes are parsed from it), not after.
 */
export const makeSender = (
  options: ResolvedOptions,
  transport: TransportShape,
  outcomes: OutcomeSink,
  outage: Outage,
  clock: Clock.Clock,
  log: DebugLog
) => {
  const headers = {
    authorization: `Basic ${Buffer.from(`${options.writeKey}:`, "utf8").toString("base64")}`,
    "content-type": "application/json",
    "user-agent": `hookrelay-node/${version}`
  }
  const timeoutMillis = Duration.toMillis(options.timeout)
  const retryForMillis = Duration.toMillis(options.retryFor)
  const orElse = () => Effect.fail(new RequestTimeout({ timeoutMillis }))
  const sendWithin = (request: TransportRequest): Effect.Effect<TransportResponse, SendError> =>
    transport.sendWithin !== undefined
      ? transport.sendWithin(request, options.timeout)
      : transport.send(request).pipe(Effect.timeoutOrElse({ duration: options.timeout, orElse }))

  // One attempt; `sentAt` is its own time, so that the server's clock-skew correction stays right.
  const attemptOnce = (batch: BatchBody): Effect.Effect<void, SendError> => {
    const now = clock.currentTimeMillisUnsafe()
    return Effect.flatMap(sendWithin({ url: options.batchUrl, headers, body: batch.stamp(formatTimestamp(now)) }), (
      response
    ) => {
      if (response.status >= 200 && response.status < 300) return Effect.void
      const retryAfterMillis = parseRetryAfter(response.retryAfter, now)
      return Effect.fail(
        new HttpError({
          status: response.status,
          body: response.body,
          ...(retryAfterMillis !== undefined && { retryAfterMillis })
        })
      )
    })
  }

  const failure = (
    progress: Progress,
    reason: FailureReason,
    error: SendError,
    count: number,
    messages: () => ReadonlyArray<OutgoingMessage>
  ): Effect.Effect<void> => {
    outcomes.failed(count)
    const status = error._tag === "HttpError" ? error.status : undefined
    return Effect.andThen(
      log(`${count} messages failed (${reason}) after ${progress.attempts} attempts: ${error.message}`),
      outcomes.observed()
        ? outcomes.report(Outcome.Failure({ messages: messages(), attempts: progress.attempts, error, status, reason }))
        : Effect.void
    )
  }

  const lastError = (progress: Progress, otherwise: string): SendError =>
    progress.lastError ?? outage.error() ?? notSent(otherwise)

  /** The whole batch, for good. */
  const settle = (batch: BatchBody, progress: Progress, reason: FailureReason, error: SendError) => {
    progress.reported = true
    return failure(progress, reason, error, batch.count, () => batch.messages())
  }

  const expire = (batch: BatchBody, progress: Progress): Effect.Effect<void> => {
    const removed = batch.removeCalledBefore(clock.currentTimeMillisUnsafe() - retryForMillis)
    if (removed.length === 0) return Effect.void
    const error = lastError(progress, `not sent within retryFor (${retryForMillis} ms)`)
    return failure(progress, "RetryForElapsed", error, removed.length, () => removed.map(parse))
  }

  const delivered = (batch: BatchBody, progress: Progress): Effect.Effect<void> => {
    progress.reported = true
    outcomes.delivered(batch.count)
    return Effect.andThen(
      log(`batch of ${batch.count} messages delivered (${progress.attempts} attempts)`),
      outcomes.observed()
        ? outcomes.report(Outcome.Success({ messages: batch.messages(), attempts: progress.attempts }))
        : Effect.void
    )
  }

  const afterFailure = (
    batch: BatchBody,
    progress: Progress,
    turn: Turn,
    error: SendError,
    again: Effect.Effect<void>
  ) => {
    if (!isRetryable(error)) {
      // A final answer shows the server reachable; a final transport error (a bad certificate) does not.
      if (error._tag === "HttpError") return Effect.andThen(outage.answered, settle(batch, progress, "Rejected", error))
      outage.leave(turn)
      return settle(batch, progress, "Rejected", error)
    }
    progress.lastError = error
    if (turn === "send") progress.failures++
    const exhausted = options.maxRetries !== undefined && turn === "send" && progress.failures > options.maxRetries
    const retryAfter = error._tag === "HttpError" ? error.retryAfterMillis : undefined
    return log(`batch of ${batch.count} messages: attempt ${progress.attempts} failed: ${error.message}`).pipe(
      Effect.andThen(outage.failed(turn, error, retryAfter)),
      Effect.andThen(exhausted ? settle(batch, progress, "RetriesExhausted", error) : again)
    )
  }

  return (batch: BatchBody, seq: number): Effect.Effect<void> => {
    const progress: Progress = { attempts: 0, failures: 0, lastError: undefined, reported: false }
    const step: Effect.Effect<void> = Effect.flatMap(outage.turn(seq), (turn) => {
      if (turn === "closed") return settle(batch, progress, "Closed", lastError(progress, "the client closed first"))
      return Effect.andThen(
        expire(batch, progress),
        Effect.suspend(() => {
          if (batch.count === 0) {
            progress.reported = true
            outage.leave(turn)
            return Effect.void
          }
          progress.attempts++
          return Effect.matchEffect(attemptOnce(batch), {
            onSuccess: () => Effect.andThen(delivered(batch, progress), outage.answered),
            onFailure: (error) => afterFailure(batch, progress, turn, error, step)
          })
        })
      )
    })
    // Interrupted by a `close` that timed out: whatever is left of the batch is reported.
    return log(`flushing ${batch.count} messages (${batch.bytes.length} bytes)`).pipe(
      Effect.andThen(step),
      Effect.onInterrupt(() =>
        progress.reported
          ? Effect.void
          : settle(batch, progress, "Closed", lastError(progress, "the client closed first"))
      )
    )
  }
}
