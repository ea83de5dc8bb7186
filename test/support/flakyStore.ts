import { Context, Effect, Layer } from "effect"
import { Outbox, type OutboxShape } from "../../src/store/Outbox.js"
import type { StoreServices } from "../../src/store/Store.js"
import { StoreError } from "../../src/store/StoreError.js"
import { wrapOperations } from "../../src/store/StoreOperations.js"

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
  "listMessages",
  "listKeys",
  "findKeyByHash",
  "listAudit",
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
export const flakyStore = <E>(inner: Layer.Layer<StoreServices, E>) => {
  const outage: { now: Outage } = { now: "none" }
  const layer = Layer.effectContext(
    Effect.map(
      Effect.context<StoreServices>(),
      (store) =>
        wrapOperations(store, (operation, call) => (...args) =>
          Effect.suspend(() => {
            const now = outage.now
            if (now === "unreachable" || (now === "full" && !reads.has(operation))) {
              return Effect.fail(new StoreError({ operation, cause: driverError(now) }))
            }
            return call(...args) as Effect.Effect<unknown, unknown>
          }))
    )
  ).pipe(Layer.provide(inner))
  return { layer, outage }
}

/** The store of `store` with its outbox replaced by what `f` makes of it (a test's slow or failing outbox). */
export const withOutbox = <E>(store: Layer.Layer<StoreServices, E>, f: (outbox: OutboxShape) => OutboxShape) =>
  Layer.effectContext(
    Effect.map(
      Effect.context<StoreServices>(),
      (services) => Context.add(services, Outbox, f(Context.get(services, Outbox)))
    )
  ).pipe(Layer.provide(store))
