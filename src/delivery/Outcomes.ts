import { Context, Effect, Layer, PubSub, Stream } from "effect"

/** How a delivery job ended, as `Relay.outcomes` reports it. */
export interface DeliveryOutcome {
  readonly jobId: string
  readonly sourceId: string
  readonly messageId: string
  readonly kind: string
  readonly status: "delivered" | "dead"
  /** Epoch ms. */
  readonly at: number
  /** The URL that answered 2xx (delivered). */
  readonly url?: string | undefined
  /** Why every URL failed (dead). */
  readonly error?: string | undefined
}

export interface DeliveryOutcomesShape {
  readonly publish: (outcome: DeliveryOutcome) => Effect.Effect<void>
  /** A flush's outcomes at once, in order (one call, not one per outcome). */
  readonly publishAll: (outcomes: ReadonlyArray<DeliveryOutcome>) => Effect.Effect<void>
  /** Outcomes from the moment of subscription on. A subscriber more than `capacity` behind loses the oldest. */
  readonly stream: Stream.Stream<DeliveryOutcome>
}

export class DeliveryOutcomes extends Context.Tag("hookrelay/DeliveryOutcomes")<
  DeliveryOutcomes,
  DeliveryOutcomesShape
>() {}

export const make = (capacity = 16_384) =>
  Effect.map(PubSub.sliding<DeliveryOutcome>(capacity), (pubsub) =>
    DeliveryOutcomes.of({
      publish: (outcome) => Effect.asVoid(PubSub.publish(pubsub, outcome)),
      publishAll: (outcomes) =>
        outcomes.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(pubsub, outcomes)),
      stream: Stream.fromPubSub(pubsub)
    }))

export const layer = Layer.effect(DeliveryOutcomes, make())
