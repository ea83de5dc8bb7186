import * as Attempts from "./Attempts.js"
import * as AudienceMembers from "./AudienceMembers.js"
import * as DeadLetters from "./DeadLetters.js"
import * as DeletionRequests from "./DeletionRequests.js"
import * as Endpoints from "./Endpoints.js"
import * as MessageLog from "./MessageLog.js"
import type { StoreShape } from "./Model.js"
import * as Outbox from "./Outbox.js"
import * as Purge from "./Purge.js"
import * as Sources from "./Sources.js"
import type { HotPaths, StoreKit } from "./StoreKit.js"
import * as TraitValues from "./TraitValues.js"
import * as Usage from "./Usage.js"

/** The writes a backend's hot paths share with the rest of the store (PostgreSQL's completions count usage, …). */
export interface SharedWrites {
  readonly usage: Usage.UsageWriter
  readonly attempts: Attempts.AttemptWriter
}

/**
 * The store's operations, one module per concern, over one backend: `kit` (its connections) and the hot paths it
 * runs (`sqlite/SqliteStore`, `pg/PgStore`). Built once per store: nothing here runs per call.
 */
export const assemble = (kit: StoreKit, makeHotPaths: (writes: SharedWrites) => HotPaths): StoreShape => {
  const writes: SharedWrites = { usage: Usage.makeWrites(kit), attempts: Attempts.makeWrites(kit) }
  const hot = makeHotPaths(writes)
  return {
    ...Sources.make(kit),
    ...Outbox.make(kit, hot),
    ...Attempts.make(kit, writes.attempts),
    ...Usage.make(kit, writes.usage),
    ...MessageLog.make(kit),
    ...DeadLetters.make(kit),
    ...Purge.make(kit, hot),
    ...DeletionRequests.make(kit),
    ...AudienceMembers.make(kit),
    ...TraitValues.make(kit),
    ...Endpoints.make(kit)
  }
}
