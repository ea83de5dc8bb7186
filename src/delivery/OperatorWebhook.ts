import { Clock, Config, ConfigProvider, Duration, Effect, Layer, Option, Queue, Redacted, Stream } from "effect"
import type { Scope } from "effect"
import { randomUUID } from "node:crypto"
import { isAbsoluteHttpUrl } from "../domain/Settings.js"
import type { AttemptSink } from "./Attempt.js"
import { deliverWith } from "./Deliver.js"
import type { DeliverOptions } from "./Deliver.js"
import { GuardEventSink } from "./EndpointGuards.js"
import { DeliveryOutcomes } from "./Outcomes.js"
import { decodeSecret, signV1, standardHeaders } from "./StandardWebhooks.js"
import { Transport } from "./Transport.js"

/** Where operator events go: a URL and the `whsec_` secret their Standard Webhooks signatures are keyed by. */
export interface OperatorWebhookOptions {
  readonly url: string
  readonly secret: Redacted.Redacted<string>
}

/** One event to the operator: `endpoint.*` from the circuits, `messages.dead` rolled up per source and minute. */
export interface OperatorEvent {
  readonly type: string
  /** Epoch ms. */
  readonly at: number
  readonly data: Readonly<Record<string, unknown>>
}

/** Events waiting to be sent at most: past this the oldest are dropped, so that a dead operator endpoint costs memory once. */
const queueBound = 1024
const rollUpEvery = Duration.minutes(1)
// The delivery program's retries over a short window: four tries (about 1, 2 and 4 s apart, jittered); an operator
// endpoint that is down loses the event (it was logged at warn).
const sendWindow = Duration.seconds(10)

// Each attempt as the delivery program classified it; the operator's attempts have no job in the store.
const logAttempt: AttemptSink = (record) =>
  record.outcome === "success" ? Effect.void : Effect.logDebug("operator webhook attempt failed").pipe(
    Effect.annotateLogs({
      url: record.url,
      attempt: record.attempt,
      outcome: record.outcome,
      ...(record.statusCode !== null && { status: record.statusCode }),
      ...(record.error !== null && { error: record.error })
    })
  )
const deliverOptions: DeliverOptions = { recordAttempt: logAttempt, policy: { window: sendWindow } }

/**
 * The operator webhook: endpoint events (through `GuardEventSink`) and dead letters rolled up to at most one
 * `messages.dead` per source per minute, each POSTed as `{type, timestamp, data}` signed with Standard Webhooks
 * headers. Sent through the delivery transport (the same egress policy); queued, never waited for by a delivery.
 */
export const make = (
  options: OperatorWebhookOptions
): Effect.Effect<typeof GuardEventSink.Service, never, Transport | DeliveryOutcomes | Scope.Scope> =>
  Effect.gen(function*() {
    const services = { transport: yield* Transport, clock: yield* Clock.Clock }
    const outcomes = yield* DeliveryOutcomes
    const key = decodeSecret(Redacted.value(options.secret))
    const queue = yield* Queue.sliding<OperatorEvent>(queueBound)

    // One job of one URL for the delivery program (classification, retries, attempt records). Signed once, at the
    // event's time, as static headers: every try sends the same webhook-id, timestamp and signature.
    const send = (event: OperatorEvent) =>
      Effect.suspend(() => {
        if (typeof key === "string") return Effect.void
        const id = `evt_${randomUUID()}`
        const timestamp = Math.floor(event.at / 1000)
        const body = new TextEncoder().encode(JSON.stringify({
          type: event.type,
          timestamp: new Date(event.at).toISOString(),
          data: event.data
        }))
        const headers = {
          [standardHeaders.id]: id,
          [standardHeaders.timestamp]: String(timestamp),
          [standardHeaders.signature]: signV1(key, id, timestamp, body)
        }
        // No shared secret: no `X-Signature`; the Standard Webhooks headers are the endpoint's static ones.
        const settings = { signing: "segment" as const, endpoints: [{ url: options.url, headers }] }
        return deliverWith(services, { jobId: id, messageId: id, body, settings }, deliverOptions).pipe(
          Effect.asVoid,
          Effect.catch((failed) =>
            Effect.logWarning(`the operator webhook did not take ${event.type}: ${failed.message}`)
          )
        )
      })

    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(queue), send)))

    // Dead letters per source since the last roll-up.
    let dead = new Map<string, number>()
    yield* Effect.forkScoped(
      Stream.runForEach(outcomes.stream, (outcome) =>
        Effect.sync(() => {
          if (outcome.status === "dead") dead.set(outcome.sourceId, (dead.get(outcome.sourceId) ?? 0) + 1)
        }))
    )
    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      yield* Effect.sleep(rollUpEvery)
      if (dead.size === 0) return
      const counts = dead
      dead = new Map()
      const at = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      for (const [sourceId, count] of counts) {
        yield* Effect.logWarning(`messages.dead: ${count} dead-lettered in the last minute`).pipe(
          Effect.annotateLogs({ sourceId })
        )
        yield* Queue.offer(queue, { type: "messages.dead", at, data: { sourceId, count } })
      }
    })))

    // An endpoint is (source, destination, URL) (REFERENCE §7b): its events name all three.
    return GuardEventSink.of({
      publish: (event) =>
        Effect.asVoid(Queue.offer(queue, {
          type: event.type,
          at: event.at,
          data: {
            url: event.url,
            sourceIds: event.sourceIds,
            ...(event.destinationId !== undefined && { destinationId: event.destinationId }),
            reason: event.reason
          }
        }))
    })
  })

export const layer = (options: OperatorWebhookOptions): Layer.Layer<
  GuardEventSink,
  never,
  Transport | DeliveryOutcomes
> => Layer.effect(GuardEventSink, make(options))

/** A refused setting, named in the message. */
const invalid = (name: string, message: string) =>
  Effect.fail(new Config.ConfigError(new ConfigProvider.SourceError({ message: `${name}: ${message}` })))

/** `HOOKRELAY_OPERATOR_WEBHOOK` and `HOOKRELAY_OPERATOR_WEBHOOK_SECRET` (a `whsec_` secret), both or neither. */
export const operatorWebhookConfig: Config.Config<Option.Option<OperatorWebhookOptions>> = Config.all({
  url: Config.option(Config.String("HOOKRELAY_OPERATOR_WEBHOOK")),
  secret: Config.option(Config.Redacted("HOOKRELAY_OPERATOR_WEBHOOK_SECRET"))
}).pipe(
  Config.mapEffect(({ secret, url }) => {
    if (Option.isNone(url)) return Effect.succeed(Option.none())
    if (!isAbsoluteHttpUrl(url.value)) return invalid("HOOKRELAY_OPERATOR_WEBHOOK", "must be an http: or https: URL")
    if (Option.isNone(secret)) return invalid("HOOKRELAY_OPERATOR_WEBHOOK_SECRET", "is required with a webhook")
    const key = decodeSecret(Redacted.value(secret.value))
    if (typeof key === "string") return invalid("HOOKRELAY_OPERATOR_WEBHOOK_SECRET", key)
    return Effect.succeed(Option.some({ url: url.value, secret: secret.value }))
  })
)
