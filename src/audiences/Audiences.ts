import { Effect } from "effect"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { Store } from "../store/Store.js"
import { makeAudienceSync, type SyncOptions } from "./AudienceSync.js"
import { makeComputedTraits } from "./ComputedTraits.js"
import { makeDeletions } from "./Deletions.js"

/**
 * Deletion requests, audience syncs and computed traits (SPEC §5, §6) over the `Store` and the
 * `OutboxSignal` in context: the operations the `Relay` service exposes. Everything they send goes
 * through the outbox and the dispatcher, like tracking calls; nothing is sent from here.
 */
export const make = (options: SyncOptions = {}) =>
  Effect.gen(function*() {
    const store = yield* Store
    const signal = yield* OutboxSignal
    return {
      ...makeDeletions(store, signal),
      ...makeAudienceSync(store, signal, options),
      ...makeComputedTraits(store, signal, options)
    }
  })
