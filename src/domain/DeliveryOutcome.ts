/** How a delivery job ended, as `Relay.outcomes` reports it: the delivery side publishes it, the library surface reads it. */
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
