import { Effect } from "effect"

/** Migration 17: API keys and the audit log (filled in by the API keys work). */
export const apiKeys = Effect.void
