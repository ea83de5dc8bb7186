import { Clock, Effect, Result } from "effect"
import { deliver, type DeliverOptions } from "../delivery/Deliver.js"
import type { AllEndpointsFailed, DeliveryResult } from "../delivery/DeliveryResult.js"
import type { Transport } from "../delivery/Transport.js"
import { type BatchError, validateBatch } from "../domain/Batch.js"
import { deliveredBody, encodeBody } from "../domain/DeliveredBody.js"
import { uuidv7 } from "../domain/MessageId.js"
import type { WebhookSettings } from "../domain/Settings.js"
import { stampMessage } from "../domain/Stamp.js"

/**
 * Delivers one message to a destination right now, without a store: the same validation,
 * stamping, body, signature, timeouts, retries and race over URLs as the engine, with retries
 * waiting in memory for up to the 4 h window. Nothing is persisted, so a process that stops
 * forgets it: use `Relay.ingest` for anything that must survive a restart.
 *
 * Fails with the validation errors of the tracking API, or `AllEndpointsFailed` when every URL
 * failed permanently or ran out of window.
 */
export const deliverMessage = (
  settings: Pick<WebhookSettings, "sharedSecret" | "endpoints">,
  message: unknown,
  options: Pick<DeliverOptions, "recordAttempt"> = {}
): Effect.Effect<DeliveryResult, BatchError | AllEndpointsFailed, Transport> =>
  Effect.gen(function*() {
    const [decoded] = yield* Result.match(validateBatch([message]), {
      onFailure: Effect.fail,
      onSuccess: Effect.succeed
    })
    const now = yield* Clock.currentTimeMillis
    const stamped = stampMessage(decoded!, { receivedAt: now, generatedMessageId: decoded!.messageId ?? uuidv7(now) })
    return yield* deliver(
      { jobId: stamped.messageId, messageId: stamped.messageId, body: encodeBody(deliveredBody(stamped)), settings },
      { recordAttempt: options.recordAttempt }
    )
  })
