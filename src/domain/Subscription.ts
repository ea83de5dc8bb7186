import * as Schema from "effect/Schema"
import { isMessageType, messageTypes } from "./Message.js"

/**
 * What a destination subscribes to (REFERENCE §1a): `types` (message types) and, for tracks, `events`. A list left out
 * takes everything; `events` says nothing about the other types.
 */

/** Values in one `types` or `events` list. */
export const maxSubscriptionValues = 100
export const maxSubscribedEventLength = 1024

const list = <S extends Schema.Top>(item: S) =>
  Schema.Array(item).check(
    Schema.makeFilter((items) =>
      (items.length >= 1 && items.length <= maxSubscriptionValues) ||
      `must hold 1 to ${maxSubscriptionValues} values (got ${items.length})`
    )
  )

const SubscribedType = Schema.String.annotate({ message: "must be a string" }).check(
  Schema.makeFilter(isMessageType, { message: `must be one of ${messageTypes.join(", ")}` })
)

const SubscribedEvent = Schema.String.annotate({ message: "must be a string" }).check(
  Schema.makeFilter((event) =>
    (event.length >= 1 && event.length <= maxSubscribedEventLength) ||
    `must be 1 to ${maxSubscribedEventLength} characters`
  )
)

export const Subscribe = Schema.Struct({
  types: Schema.optionalKey(list(SubscribedType)),
  events: Schema.optionalKey(list(SubscribedEvent))
})
export type Subscribe = typeof Subscribe.Type

/** Whether a message of `type` (and `event`, for a track) is one the subscription asks for. */
export const subscribes = (subscribe: Subscribe | undefined, type: string, event: unknown): boolean => {
  if (subscribe === undefined) return true
  if (subscribe.types !== undefined && !subscribe.types.includes(type)) return false
  if (type !== "track" || subscribe.events === undefined) return true
  return typeof event === "string" && subscribe.events.includes(event)
}
