/**
 * An endpoint is one URL of one destination of one source (REFERENCE §7b): its circuit, rate limit, health and
 * disabled state are its own, whoever else posts to the same URL.
 */
export interface EndpointKey {
  readonly sourceId: string
  readonly destinationId: string
  readonly url: string
}

/**
 * The key as one string, for maps and sets (looked up for every job): the two ids are slugs, which hold no NUL, so the
 * first two NULs end them whatever the URL holds.
 */
export const endpointKeyString = (key: EndpointKey): string =>
  `${key.sourceId}\u0000${key.destinationId}\u0000${key.url}`

/** Which endpoints an operator names: a URL, optionally narrowed to a source and one of its destinations. */
export interface EndpointSelector {
  readonly url: string
  readonly sourceId?: string | undefined
  readonly destinationId?: string | undefined
}

export const selects = (selector: EndpointSelector, key: EndpointKey): boolean =>
  key.url === selector.url &&
  (selector.sourceId === undefined || key.sourceId === selector.sourceId) &&
  (selector.destinationId === undefined || key.destinationId === selector.destinationId)
