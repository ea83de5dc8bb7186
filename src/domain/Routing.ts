import { dropsMessage } from "./Filters.js"
import { selectsWebhooks } from "./Integrations.js"
import type { Message } from "./Message.js"
import type { Destination, WebhookSettings } from "./Settings.js"
import { subscribes } from "./Subscription.js"

/**
 * Why an accepted message creates no delivery job for a destination; `undefined` when it is to be delivered there.
 * `filtered`: a destination filter dropped it (counted as `filtered` in usage, REFERENCE §10, §11).
 */
export type SkipReason = "no-destination" | "disabled" | "integrations" | "unsubscribed" | "filtered"

/**
 * Decides whether an accepted message goes to one destination (REFERENCE §1a, §2, §10): the destination's switch,
 * the message's `integrations` (the same answer for every webhook destination), its subscription, then its filters.
 */
export const skipReason = (settings: WebhookSettings | undefined, message: Message): SkipReason | undefined => {
  if (settings === undefined) return "no-destination"
  if (!settings.enabled) return "disabled"
  if (!selectsWebhooks(message.integrations)) return "integrations"
  if (!subscribes(settings.subscribe, message.type, message.event)) return "unsubscribed"
  if (dropsMessage(settings.filters, message)) return "filtered"
  return undefined
}

/** Where one accepted message goes: the destinations it gets a job for, in the source's order. */
export interface Route {
  readonly destinationIds: ReadonlyArray<string>
  /** No job, and a destination's filter dropped it: counted as `filtered` (REFERENCE §11). */
  readonly filtered: boolean
}

const nowhere: Route = { destinationIds: [], filtered: false }
const filteredOut: Route = { destinationIds: [], filtered: true }

// Settings are immutable values read from the source cache: the route to one destination alone is made once.
const toOnly = new WeakMap<Destination, Route>()

const onlyTo = (destination: Destination): Route => {
  let route = toOnly.get(destination)
  if (route === undefined) toOnly.set(destination, route = { destinationIds: [destination.id], filtered: false })
  return route
}

/** One job per enabled destination the message matches (REFERENCE §1a). */
export const routeMessage = (destinations: ReadonlyArray<Destination>, message: Message): Route => {
  if (destinations.length === 0 || !selectsWebhooks(message.integrations)) return nowhere
  let first: Destination | undefined
  let destinationIds: Array<string> | undefined
  let filtered = false
  for (const destination of destinations) {
    const skipped = skipReason(destination, message)
    if (skipped === undefined) {
      if (first === undefined) first = destination
      else (destinationIds ??= [first.id]).push(destination.id)
    } else if (skipped === "filtered") filtered = true
  }
  if (destinationIds !== undefined) return { destinationIds, filtered: false }
  if (first !== undefined) return onlyTo(first)
  return filtered ? filteredOut : nowhere
}

/** The destinations a delete notice goes to: every enabled one, whatever it subscribes to (REFERENCE §5). */
export const deleteNoticeDestinations = (destinations: ReadonlyArray<Destination>): ReadonlyArray<Destination> =>
  destinations.filter((destination) => destination.enabled)

/** The destinations an audience or computed-trait identify goes to: enabled, subscribed to identifies (REFERENCE §6). */
export const identifyDestinations = (destinations: ReadonlyArray<Destination>): ReadonlyArray<Destination> =>
  destinations.filter((destination) => destination.enabled && subscribes(destination.subscribe, "identify", undefined))
