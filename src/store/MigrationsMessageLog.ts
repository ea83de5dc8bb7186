import { Effect } from "effect"

/** Migration 19: the operator's message log (filled in by the message log work). */
export const messageLog = Effect.void
