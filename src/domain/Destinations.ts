import type { Destination, Endpoint, SourceConfig, WebhookSettings } from "./Settings.js"
import { webhooksDestinationId } from "./Settings.js"

/**
 * A source's destinations as one list (REFERENCE §1a). The `webhooks` object of today's bodies is the destination with
 * the id `webhooks`: these functions turn one form into the other.
 */

/** The destination `webhooks` as the `webhooks` object (without its id); undefined when the source has none. */
export const webhooksOf = (destinations: ReadonlyArray<Destination>): WebhookSettings | undefined => {
  const destination = destinations.find((candidate) => candidate.id === webhooksDestinationId)
  return destination === undefined ? undefined : settingsOf(destination)
}

/** A destination's settings without its id. */
export const settingsOf = (destination: Destination): WebhookSettings => {
  const { id: _id, ...settings } = destination
  return settings
}

/** The `webhooks` object as the destination it is. */
export const webhooksDestination = (settings: WebhookSettings): Destination => ({
  id: webhooksDestinationId,
  ...settings
})

/** The destination of `id`, if the source has it. */
export const destinationById = (
  destinations: ReadonlyArray<Destination>,
  id: string
): Destination | undefined => destinations.find((destination) => destination.id === id)

/**
 * Every endpoint of a source, destination by destination in the source's order, with its destination's id: its
 * position in this list is the endpoint's index (the metrics' label and the health list's order).
 */
export const endpointsOf = (
  destinations: ReadonlyArray<Destination>
): ReadonlyArray<{ readonly destinationId: string; readonly endpoint: Endpoint }> =>
  destinations.flatMap((destination) =>
    destination.endpoints.map((endpoint) => ({ destinationId: destination.id, endpoint }))
  )

/** The list with the destination `webhooks` first, the others in their order: the one order a source's list has. */
const webhooksFirst = (destinations: ReadonlyArray<Destination>): ReadonlyArray<Destination> => {
  const at = destinations.findIndex((destination) => destination.id === webhooksDestinationId)
  return at <= 0 ? destinations : [destinations[at]!, ...destinations.filter((_, index) => index !== at)]
}

/**
 * The list a source's settings body leaves (REFERENCE §1a), the destination `webhooks` first. `destinations` replaces
 * the list (with `webhooks`, when also given, as its destination `webhooks`). Without it the body speaks of the
 * destination `webhooks` only, as bodies did before destinations: carrying `webhooks` sets it, not carrying it removes
 * it; the other destinations are kept.
 */
export const applySourceConfig = (
  current: ReadonlyArray<Destination>,
  config: Pick<SourceConfig, "webhooks" | "destinations">
): ReadonlyArray<Destination> => {
  const webhooks = config.webhooks === undefined ? [] : [webhooksDestination(config.webhooks)]
  if (config.destinations !== undefined) return webhooksFirst([...webhooks, ...config.destinations])
  return [...webhooks, ...current.filter((destination) => destination.id !== webhooksDestinationId)]
}
