import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { formatTimestamp } from "../domain/Timestamp.js"
import type { BatchBody } from "./Batcher.js"
import { HttpError, RequestTimeout, type SendError } from "./ClientErrors.js"
import { parseRetryAfter, retrySchedule } from "./ClientRetry.js"
import type { TransportRequest, TransportResponse, TransportShape } from "./ClientTransport.js"
import type { DebugLog } from "./Debug.js"
import type { ResolvedOptions } from "./Options.js"
import { Outcome } from "./Outcome.js"
import { version } from "./version.js"

/** Where outcomes go; building one is skipped when nobody observes them. */
export interface OutcomeSink {
  readonly observed: () => boolean
  readonly report: (outcome: Outcome) => Effect.Effect<void>
}

/**
 * Sends one batch to `POST {endpoint}/v1/batch`, retrying as `retrySchedule` says, and reports
 * its outcome. Never fails: a batch that cannot be delivered is a `Failure` outcome. The body's
 * buffer is read until the returned effect ends (outcomes are parsed from it), not after.
 */
export const makeSender = (
  options: ResolvedOptions,
  transport: TransportShape,
  outcomes: OutcomeSink,
  log: DebugLog
) => {
  const headers = {
    authorization: `Basic ${Buffer.from(`${options.writeKey}:`, "utf8").toString("base64")}`,
    "content-type": "application/json",
    "user-agent": `hookrelay-node/${version}`
  }
  const schedule = retrySchedule(options.maxRetries)
  const timeoutMillis = Duration.toMillis(options.timeout)
  const orElse = () => Effect.fail(new RequestTimeout({ timeoutMillis }))
  const sendWithin = (request: TransportRequest): Effect.Effect<TransportResponse, SendError> =>
    transport.sendWithin !== undefined
      ? transport.sendWithin(request, options.timeout)
      : transport.send(request).pipe(Effect.timeoutOrElse({ duration: options.timeout, orElse }))

  return (batch: BatchBody): Effect.Effect<void> => {
    const count = batch.count
    if (count === 0) return Effect.void
    let attempts = 0
    // `sentAt` is the time of each attempt, so that the server's clock-skew correction stays right on retries.
    const attempt: Effect.Effect<void, SendError> = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      attempts++
      const body = batch.stamp(formatTimestamp(now))
      return sendWithin({ url: options.batchUrl, headers, body }).pipe(
        Effect.flatMap((response) => {
          if (response.status >= 200 && response.status < 300) return Effect.void
          const retryAfterMillis = parseRetryAfter(response.retryAfter, now)
          return Effect.fail(
            new HttpError({
              status: response.status,
              body: response.body,
              ...(retryAfterMillis !== undefined && { retryAfterMillis })
            })
          )
        }),
        Effect.tapError((error) => log(`batch of ${count} messages: attempt ${attempts} failed: ${error.message}`))
      )
    })
    const messages = () => batch.messages()
    return log(`flushing ${count} messages (${batch.bytes.length} bytes)`).pipe(
      Effect.andThen(Effect.retry(attempt, schedule)),
      Effect.matchEffect({
        onSuccess: () =>
          Effect.andThen(
            log(`batch of ${count} messages delivered (${attempts} attempts)`),
            outcomes.observed() ? outcomes.report(Outcome.Success({ messages: messages(), attempts })) : Effect.void
          ),
        onFailure: (error) =>
          Effect.andThen(
            log(`batch of ${count} messages failed after ${attempts} attempts: ${error.message}`),
            outcomes.observed()
              ? outcomes.report(Outcome.Failure({
                messages: messages(),
                attempts,
                error,
                status: error._tag === "HttpError" ? error.status : undefined
              }))
              : Effect.void
          )
      })
    )
  }
}
