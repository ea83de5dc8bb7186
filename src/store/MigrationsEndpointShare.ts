import { Effect } from "effect"

/** Migration 18: endpoint state shared by the replicas of a deployment (filled in by the deployment work). */
export const endpointShare = Effect.void
