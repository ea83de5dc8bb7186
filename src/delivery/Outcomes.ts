import { Context, Effect, Layer, PubSub, Stream } from "effect"

import type { DeliveryOutcome } from "../domain/DeliveryOutcome.js"

export type { DeliveryOutcome } from "../domain/DeliveryOutcome.js"

export interface DeliveryOutcomesShape {
  readonly publish: (outcome: DeliveryOutcome) => Effect.Effect<void>
  /** A flush's outcomes at once, in order (one call, not one per outcome). */
  readonly publishAll: (outcomes: ReadonlyArray<DeliveryOutcome>) => Effect.Effect<void>
  /** Outcomes from the moment of subscription on. A subscriber more than `capacity` behind loses the oldest. */
  readonly stream: Stream.Stream<DeliveryOutcome>
}

export class DeliveryOutcomes extends Context.Service<DeliveryOutcomes, DeliveryOutcomesShape>()(
  "hookrelay/DeliveryOutcomes"
) {}

export const make = (capacity = 16_384) =>
  Effect.map(PubSub.sliding<DeliveryOutcome>(capacity), (pubsub) =>
    DeliveryOutcomes.of({
      publish: (outcome) => Effect.asVoid(PubSub.publish(pubsub, outcome)),
      publishAll: (outcomes) =>
        outcomes.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(pubsub, outcomes)),
      stream: Stream.fromPubSub(pubsub)
    }))

export const layer = Layer.effect(DeliveryOutcomes, make())
