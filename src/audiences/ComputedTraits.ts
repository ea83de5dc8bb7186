import { Clock, Effect, Result } from "effect"
import type { UnknownSource } from "../domain/IngestErrors.js"
import type { OutboxSignalShape } from "../store/OutboxSignal.js"
import type { SourcesShape } from "../store/Sources.js"
import type { StoreError } from "../store/StoreError.js"
import type { TraitValuesShape } from "../store/TraitValues.js"
import { InvalidAdminRequest } from "./AudienceErrors.js"
import {
  defaultChunkSize,
  identifyDestinationIds,
  sourceOf,
  type SyncOptions,
  yieldToEventLoop
} from "./AudienceSync.js"
import { chunks } from "./Chunks.js"
import { identifyJobs } from "./Identify.js"
import { type TraitValue, validateName, validateTraitValues } from "./Input.js"

/** What a computed-trait sync changed. */
export interface TraitSyncResult {
  /** The trait as sent: the snake_case of its name. */
  readonly property: string
  /** Users whose value was new or different: each got an identify with the new value. */
  readonly changed: number
  /** Users whose value was cleared by `null`: each that had a value got an identify with `null`. */
  readonly cleared: number
  /** Users given the value they already had (or `null` without a value): nothing sent. */
  readonly unchanged: number
}

/**
 * Computed traits: `values` maps user ids to a JSON scalar; each user whose value is new or
 * different from the last one stored gets an identify with `traits: {<snake_case name>: value}`.
 * It is a partial update, not a full snapshot like an audience: users absent from `values` are
 * left alone (their last value stands and nothing is sent); `null` clears a user's value (an
 * identify with `null` is sent if there was one). Values compare by their JSON text (`1` and
 * `1.0` are the same value).
 *
 * Chunked like audience syncs, one transaction per chunk: the upsert (`… DO UPDATE … WHERE value
 * <> excluded.value RETURNING`) reports exactly the rows it changed, and their identify jobs
 * commit with them, so a sync stopped half way is resumed by running it again. No lease is needed:
 * every row's change and its message commit together, and a partial update has no "removed" pass
 * that concurrent syncs could disturb. With the destination disabled the values are still stored.
 */
/** The store's services a computed trait sync uses. */
export interface TraitStores {
  readonly sources: SourcesShape
  readonly traits: TraitValuesShape
}

export const makeComputedTraits = (stores: TraitStores, signal: OutboxSignalShape, options: SyncOptions = {}) => {
  const chunkSize = Math.max(1, Math.floor(options.chunkSize ?? defaultChunkSize))

  const syncComputedTrait = (
    sourceId: string,
    traitName: string,
    valuesInput: Readonly<Record<string, TraitValue>>
  ): Effect.Effect<TraitSyncResult, InvalidAdminRequest | UnknownSource | StoreError> =>
    Effect.gen(function*() {
      const name = validateName(traitName, "traitName")
      const values = validateTraitValues(valuesInput, "values")
      if (Result.isFailure(name) || Result.isFailure(values)) {
        return yield* new InvalidAdminRequest({
          errors: [...Result.isFailure(name) ? name.failure : [], ...Result.isFailure(values) ? values.failure : []]
        })
      }
      const { property } = name.success
      const source = yield* sourceOf(stores.sources, sourceId)
      const destinationIds = identifyDestinationIds(source)
      let changed = 0
      let cleared = 0
      for (const chunk of chunks(values.success, chunkSize)) {
        const now = yield* Clock.currentTimeMillis
        const result = yield* stores.traits.applyTraitChunk({
          sourceId: source.id,
          trait: property,
          now,
          values: chunk,
          identify: { build: identifyJobs(property, now), destinationIds }
        })
        changed += result.changed
        cleared += result.cleared
        if (result.jobsCreated > 0) yield* signal.notify
        yield* yieldToEventLoop
      }
      return { property, changed, cleared, unchanged: values.success.length - changed - cleared }
    })

  return { syncComputedTrait }
}
