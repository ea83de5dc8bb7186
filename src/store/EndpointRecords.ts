/** What the store keeps and answers about endpoints: disabled URLs, attempt statistics, bulk dead-letter recovery. */

/** An endpoint (source, destination, URL) an operator or its circuit disabled: it receives nothing until enabled. */
export interface DisabledEndpoint {
  readonly sourceId: string
  readonly destinationId: string
  readonly url: string
  readonly disabledAt: number
  readonly reason: string
}

/** One endpoint's recorded attempts since a time (the health page's hour and day). */
export interface EndpointStats {
  readonly attempts: number
  readonly successes: number
  /** Milliseconds; null without attempts. */
  readonly p50LatencyMs: number | null
  readonly p99LatencyMs: number | null
}

/** The last success and the last failure ever recorded for an endpoint (within retention). */
export interface EndpointLastAttempts {
  readonly lastSuccessAt: number | null
  readonly lastFailureAt: number | null
  readonly lastFailure: string | null
}

/** Which dead letters a bulk replay or purge takes: a source's, optionally of one URL and a range of death times. */
export interface DeadLetterFilter {
  readonly sourceId: string
  /** Only jobs whose stored progress names this URL. */
  readonly url?: string | undefined
  /** Epoch ms, inclusive: jobs dead at or after. */
  readonly since?: number | undefined
  /** Epoch ms, exclusive: jobs dead before. */
  readonly until?: number | undefined
  /** Only jobs of these destinations (a replay takes none of a deleted destination's, REFERENCE §1a). */
  readonly destinationIds?: ReadonlyArray<string> | undefined
}
