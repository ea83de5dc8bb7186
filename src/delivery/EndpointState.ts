import { EndpointState } from "./DeliveryResult.js"

/**
 * The per-URL progress of a job as the store keeps it (the job's `endpoint_state` column): plain
 * JSON, without the last outcome (the attempts table has it), so that a restarted process
 * resumes each URL with its attempt count, its next due time, or knowing it is retired.
 */
type PersistedState =
  | { readonly tag: "pending"; readonly url: string; readonly attempts: number; readonly nextAttemptAt: number }
  | {
    readonly tag: "retired"
    readonly url: string
    readonly attempts: number
    readonly why: "permanent" | "out-of-window"
  }

export const persistStates = (states: ReadonlyArray<EndpointState>): ReadonlyArray<PersistedState> =>
  states.map((state) =>
    state._tag === "Pending"
      ? { tag: "pending", url: state.url, attempts: state.attempts, nextAttemptAt: state.nextAttemptAt }
      : { tag: "retired", url: state.url, attempts: state.attempts, why: state.why }
  )

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** Reads what `persistStates` wrote; anything unreadable is ignored (the URL starts fresh). */
export const restoreStates = (persisted: unknown): ReadonlyArray<EndpointState> => {
  if (!Array.isArray(persisted)) return []
  const states: Array<EndpointState> = []
  for (const entry of persisted) {
    if (!isRecord(entry) || typeof entry.url !== "string" || typeof entry.attempts !== "number") continue
    if (entry.tag === "pending" && typeof entry.nextAttemptAt === "number") {
      states.push(
        EndpointState.Pending({ url: entry.url, attempts: entry.attempts, nextAttemptAt: entry.nextAttemptAt })
      )
    } else if (entry.tag === "retired" && (entry.why === "permanent" || entry.why === "out-of-window")) {
      states.push(EndpointState.Retired({ url: entry.url, attempts: entry.attempts, why: entry.why }))
    }
  }
  return states
}
