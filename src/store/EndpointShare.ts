import { Context, Effect } from "effect"
import type { EndpointKey } from "../domain/EndpointKey.js"
import type { StoreError } from "./StoreError.js"

/** A failing endpoint's circuit as the deployment shares it; a healthy endpoint has none. */
export interface SharedCircuit {
  readonly key: EndpointKey
  readonly state: "closed" | "open" | "probing"
  /** Consecutive failures, every process's together. */
  readonly failures: number
  /** Open: when the next probe may go. Probing: when the probe's lease ends (its process died: another may probe). */
  readonly nextProbeAt: number
}

export interface FailureInput {
  readonly now: number
  readonly threshold: number
  /** The failed attempt was this process's probe. */
  readonly probe: boolean
}

export interface ReservedStarts {
  readonly first: number
  readonly now: number
}

export interface EndpointShareShape {
  /**
   * Reserves `count` consecutive start instants `intervalMillis` apart on the endpoint's deployment-wide limit: the
   * first of them and the store's clock as it answered, both epoch milliseconds on the store's clock.
   */
  readonly reserveStarts: (
    key: EndpointKey,
    intervalMillis: number,
    count: number
  ) => Effect.Effect<ReservedStarts, StoreError>
  /** A counted failure: the circuit after it, and whether this call opened it (the one process that tells). */
  readonly failed: (
    key: EndpointKey,
    input: FailureInput
  ) => Effect.Effect<{ readonly circuit: SharedCircuit; readonly opened: boolean }, StoreError>
  /** The endpoint answered: its circuit is gone; true when this call closed an open one (the one process that tells). */
  readonly succeeded: (key: EndpointKey) => Effect.Effect<boolean, StoreError>
  /** Takes the open circuit's probe for this process if it is due and nobody holds it; the circuit after. */
  readonly claimProbe: (
    key: EndpointKey,
    now: number,
    leaseMillis: number
  ) => Effect.Effect<{ readonly won: boolean; readonly circuit: SharedCircuit | undefined }, StoreError>
  /** This process's probe ended without an outcome: the next may go at once. */
  readonly probeAborted: (key: EndpointKey, now: number) => Effect.Effect<void, StoreError>
  /** Every circuit that is not healthy: what each process's guards follow. */
  readonly circuits: Effect.Effect<ReadonlyArray<SharedCircuit>, StoreError>
}

/**
 * Circuits and rate limits shared by the processes of one deployment. On PostgreSQL the store provides it
 * (`EndpointSharePg`, rows of migration 18); without it (SQLite, one process) every guard keeps its endpoint in
 * memory. A double in memory for the tests is in `test/support/memoryEndpointShare.ts`.
 */
export class EndpointShare extends Context.Service<EndpointShare, EndpointShareShape>()(
  "hookrelay/store/EndpointShare"
) {}

export const coolOffFirst = 5_000
export const coolOffMax = 300_000
