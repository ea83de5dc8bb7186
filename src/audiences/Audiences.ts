import { Effect } from "effect"
import { AudienceMembers } from "../store/AudienceMembers.js"
import { DeletionRequests } from "../store/DeletionRequests.js"
import { OutboxSignal } from "../store/OutboxSignal.js"
import { Sources } from "../store/Sources.js"
import { TraitValues } from "../store/TraitValues.js"
import { makeAudienceSync, type SyncOptions } from "./AudienceSync.js"
import { makeComputedTraits } from "./ComputedTraits.js"
import { makeDeletions } from "./Deletions.js"

/**
 * Deletion requests, audience syncs and computed traits (REFERENCE §5, §6) over the store's services and
 * the `OutboxSignal` in context: the operations the `Relay` service exposes. Everything they send goes
 * through the outbox and the dispatcher, like tracking calls; nothing is sent from here.
 */
export const make = (options: SyncOptions = {}) =>
  Effect.gen(function*() {
    const sources = yield* Sources
    const signal = yield* OutboxSignal
    return {
      ...makeDeletions({ sources, deletions: yield* DeletionRequests }, signal),
      ...makeAudienceSync({ sources, members: yield* AudienceMembers }, signal, options),
      ...makeComputedTraits({ sources, traits: yield* TraitValues }, signal, options)
    }
  })
