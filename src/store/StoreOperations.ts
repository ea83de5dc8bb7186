import { Context } from "effect"
import * as ApiKeys from "./ApiKeys.js"
import * as Attempts from "./Attempts.js"
import * as AudienceMembers from "./AudienceMembers.js"
import * as AuditLog from "./AuditLog.js"
import * as DeadLetters from "./DeadLetters.js"
import * as DeletionRequests from "./DeletionRequests.js"
import * as Endpoints from "./Endpoints.js"
import * as MessageLog from "./MessageLog.js"
import * as Outbox from "./Outbox.js"
import * as Purge from "./Purge.js"
import type { SecretBoxShape } from "./SecretBox.js"
import * as Sources from "./Sources.js"
import type { HotPaths, StoreKit } from "./StoreKit.js"
import * as TraitValues from "./TraitValues.js"
import * as Usage from "./Usage.js"

/** Every service of a store, one per concern: what a store layer provides, all from one build. */
export type StoreServices =
  | Sources.Sources
  | Outbox.Outbox
  | Attempts.Attempts
  | Usage.Usage
  | MessageLog.MessageLog
  | DeadLetters.DeadLetters
  | Purge.Purge
  | DeletionRequests.DeletionRequests
  | AudienceMembers.AudienceMembers
  | TraitValues.TraitValues
  | Endpoints.Endpoints
  | ApiKeys.ApiKeys
  | AuditLog.AuditLog

/** The keys of the store's services, for what wraps every call of a store (health, fault injection in tests). */
export const storeServiceKeys = [
  Sources.Sources,
  Outbox.Outbox,
  Attempts.Attempts,
  Usage.Usage,
  MessageLog.MessageLog,
  DeadLetters.DeadLetters,
  Purge.Purge,
  DeletionRequests.DeletionRequests,
  AudienceMembers.AudienceMembers,
  TraitValues.TraitValues,
  Endpoints.Endpoints,
  ApiKeys.ApiKeys,
  AuditLog.AuditLog
] as const

/**
 * The store's services with every operation wrapped by `wrap` (given the operation's name and its function): what
 * observes or fails store calls without knowing each service.
 */
export const wrapOperations = (
  context: Context.Context<StoreServices>,
  wrap: (operation: string, call: (...args: Array<unknown>) => unknown) => (...args: Array<unknown>) => unknown
): Context.Context<StoreServices> =>
  storeServiceKeys.reduce((wrapped, key) => {
    const service: object = Context.get(context, key as Context.Key<StoreServices, object>)
    const calls: Record<string, unknown> = {}
    for (const [operation, value] of Object.entries(service)) {
      calls[operation] = typeof value === "function"
        ? wrap(operation, value as (...args: Array<unknown>) => unknown)
        : value
    }
    return Context.add(wrapped, key as Context.Key<StoreServices, object>, calls)
  }, context)

/** The writes a backend's hot paths share with the rest of the store (PostgreSQL's completions count usage, …). */
export interface SharedWrites {
  readonly usage: Usage.UsageWriter
  readonly attempts: Attempts.AttemptWriter
}

/**
 * The store's services, one module per concern, over one backend: `kit` (its connections) and the hot paths it runs
 * (`sqlite/SqliteStore`, `pg/PgStore`). Built once per store: nothing here runs per call.
 */
export const assemble = (
  kit: StoreKit,
  makeHotPaths: (writes: SharedWrites) => HotPaths,
  secrets?: SecretBoxShape
): Context.Context<StoreServices> => {
  const writes: SharedWrites = { usage: Usage.makeWrites(kit), attempts: Attempts.makeWrites(kit) }
  const hot = makeHotPaths(writes)
  return Context.make(Sources.Sources, Sources.make(kit, secrets)).pipe(
    Context.add(Outbox.Outbox, Outbox.make(kit, hot)),
    Context.add(Attempts.Attempts, Attempts.make(kit, writes.attempts)),
    Context.add(Usage.Usage, Usage.make(kit, writes.usage)),
    Context.add(MessageLog.MessageLog, MessageLog.make(kit)),
    Context.add(DeadLetters.DeadLetters, DeadLetters.make(kit)),
    Context.add(Purge.Purge, Purge.make(kit, hot)),
    Context.add(DeletionRequests.DeletionRequests, DeletionRequests.make(kit)),
    Context.add(AudienceMembers.AudienceMembers, AudienceMembers.make(kit)),
    Context.add(TraitValues.TraitValues, TraitValues.make(kit)),
    Context.add(Endpoints.Endpoints, Endpoints.make(kit)),
    Context.add(ApiKeys.ApiKeys, ApiKeys.make(kit)),
    Context.add(AuditLog.AuditLog, AuditLog.make(kit))
  )
}
