import { Context, Effect } from "effect"
import type { Clock } from "effect"
import { randomUUID } from "node:crypto"
import { type EndpointKey, endpointKeyString } from "../domain/EndpointKey.js"
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

export interface EndpointShareShape {
  /**
   * Reserves `count` consecutive start instants `intervalMillis` apart on the endpoint's deployment-wide limit; the
   * delay from now (milliseconds, on the store's clock) until the first.
   */
  readonly reserveStarts: (key: EndpointKey, intervalMillis: number, count: number) => Effect.Effect<number, StoreError>
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
 * memory. `makeMemory` is the same contract in memory: one process's guards, or the tests' replicas.
 */
export class EndpointShare extends Context.Service<EndpointShare, EndpointShareShape>()(
  "hookrelay/store/EndpointShare"
) {}

export const coolOffFirst = 5_000
export const coolOffMax = 300_000

interface Row {
  state: SharedCircuit["state"]
  failures: number
  nextProbeAt: number
  coolOff: number
  probeOwner: string | undefined
}

/** One failure applied to a circuit (undefined: none yet), as the PostgreSQL statement applies it; opened or not. */
export const applyFailure = (
  row: Row | undefined,
  input: FailureInput,
  owner: string
): { readonly row: Row; readonly opened: boolean } => {
  const current = row ?? { state: "closed", failures: 0, nextProbeAt: 0, coolOff: coolOffFirst, probeOwner: undefined }
  const failures = current.failures + 1
  if (current.state === "closed" && failures >= input.threshold) {
    return {
      row: {
        state: "open",
        failures,
        nextProbeAt: input.now + coolOffFirst,
        coolOff: coolOffFirst,
        probeOwner: undefined
      },
      opened: true
    }
  }
  if (current.state === "probing" && input.probe && current.probeOwner === owner) {
    const coolOff = Math.min(current.coolOff * 2, coolOffMax)
    return {
      row: { state: "open", failures, nextProbeAt: input.now + coolOff, coolOff, probeOwner: undefined },
      opened: false
    }
  }
  return { row: { ...current, failures }, opened: false }
}

const circuitOf = (key: EndpointKey, row: Row): SharedCircuit => ({
  key,
  state: row.state,
  failures: row.failures,
  nextProbeAt: row.nextProbeAt
})

/** The contract in memory, on the Clock; each `process` is a view with its own probe owner, as a replica would be. */
export const makeMemory = (clock: Clock.Clock) => {
  const rows = new Map<string, { key: EndpointKey; row: Row }>()
  const nextFree = new Map<string, number>()
  const process = (owner: string = randomUUID()): EndpointShareShape => ({
    reserveStarts: (key, interval, count) =>
      Effect.sync(() => {
        const now = clock.currentTimeMillisUnsafe()
        const id = endpointKeyString(key)
        const first = Math.max(now, nextFree.get(id) ?? 0)
        nextFree.set(id, first + count * interval)
        return first - now
      }),
    failed: (key, input) =>
      Effect.sync(() => {
        const id = endpointKeyString(key)
        const { opened, row } = applyFailure(rows.get(id)?.row, input, owner)
        rows.set(id, { key, row })
        return { circuit: circuitOf(key, row), opened }
      }),
    succeeded: (key) =>
      Effect.sync(() => {
        const id = endpointKeyString(key)
        const entry = rows.get(id)
        rows.delete(id)
        return entry !== undefined && entry.row.state !== "closed"
      }),
    claimProbe: (key, now, lease) =>
      Effect.sync(() => {
        const entry = rows.get(endpointKeyString(key))
        if (entry === undefined) return { won: false, circuit: undefined }
        const due = entry.row.state !== "closed" && entry.row.nextProbeAt <= now
        if (due) entry.row = { ...entry.row, state: "probing", probeOwner: owner, nextProbeAt: now + lease }
        return { won: due, circuit: circuitOf(key, entry.row) }
      }),
    probeAborted: (key, now) =>
      Effect.sync(() => {
        const entry = rows.get(endpointKeyString(key))
        if (entry === undefined || entry.row.state !== "probing" || entry.row.probeOwner !== owner) return
        entry.row = { ...entry.row, state: "open", nextProbeAt: now, probeOwner: undefined }
      }),
    circuits: Effect.sync(() => Array.from(rows.values(), ({ key, row }) => circuitOf(key, row)))
  })
  return { process }
}
