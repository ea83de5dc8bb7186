import type { Clock } from "effect"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { type EndpointKey, endpointKeyString } from "../../src/domain/EndpointKey.js"
import {
  coolOffFirst,
  coolOffMax,
  type EndpointShareShape,
  type FailureInput,
  type SharedCircuit
} from "../../src/store/EndpointShare.js"

/**
 * The endpoint share's contract in memory, on the Clock, for the tests: several guards (replicas) over one share without
 * PostgreSQL. It mirrors the statements of `EndpointSharePg`; test/store/EndpointShare.test.ts runs the same contract
 * against both, which keeps them together.
 */

interface Row {
  state: SharedCircuit["state"]
  failures: number
  nextProbeAt: number
  coolOff: number
  probeOwner: string | undefined
}

/** One failure applied to a circuit (undefined: none yet), as the PostgreSQL statement applies it; opened or not. */
const applyFailure = (
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
        return { first, now }
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
