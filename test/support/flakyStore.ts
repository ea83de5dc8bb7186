import { Effect, Layer } from "effect"
import type { StoreShape } from "../../src/store/Model.js"
import { Store } from "../../src/store/Store.js"
import { StoreError } from "../../src/store/StoreError.js"

/** What the flaky store does now: answer, refuse every call as a lost connection, or refuse writes as a full disk. */
export type Outage = "none" | "unreachable" | "full"

const reads = new Set([
  "getSource",
  "findSourceByWriteKey",
  "listSources",
  "nextWakeAt",
  "getJob",
  "jobsForMessage",
  "listDeadLetters",
  "backlog",
  "usage",
  "searchMessages",
  "getDeletion",
  "audienceMembersAmong",
  "audienceMembersPage"
])

const driverError = (outage: Exclude<Outage, "none">) =>
  outage === "unreachable"
    ? Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5499"), { code: "ECONNREFUSED" })
    : Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" })

/**
 * A real store behind a switch: while `outage.now` is not "none", its calls fail with the driver errors an unreachable
 * PostgreSQL or a full SQLite disk give (a full disk still answers reads), and nothing reaches the store.
 */
export const flakyStore = <E>(inner: Layer.Layer<Store, E>) => {
  const outage: { now: Outage } = { now: "none" }
  const layer = Layer.effect(
    Store,
    Effect.map(Store, (store): StoreShape => {
      const wrapped: Record<string, unknown> = {}
      for (const [operation, value] of Object.entries(store)) {
        wrapped[operation] = typeof value !== "function" ? value : (...args: Array<unknown>) =>
          Effect.suspend(() => {
            const now = outage.now
            if (now === "unreachable" || (now === "full" && !reads.has(operation))) {
              return Effect.fail(new StoreError({ operation, cause: driverError(now) }))
            }
            return (value as (...args: Array<unknown>) => Effect.Effect<unknown, unknown>)(...args)
          })
      }
      return wrapped as unknown as StoreShape
    })
  ).pipe(Layer.provide(inner))
  return { layer, outage }
}
