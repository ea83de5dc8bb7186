import { Deferred, Effect, Exit, Option } from "effect"
import type { StoredSource } from "./Model.js"
import type { SettingsVersionShape } from "./SettingsVersion.js"
import type { SourcesShape } from "./Sources.js"
import type { StoreError } from "./StoreError.js"

/** How long a source read from the store is trusted at most: the bound when no settings change is heard. */
export const sourceCacheTtlMillis = 2_000

interface Entry {
  readonly source: Deferred.Deferred<Option.Option<StoredSource>, StoreError>
  readonly expiresAt: number
  /** The settings generation it was read in: a later admin write (here or elsewhere) makes it stale. */
  readonly generation: number
  /** The read's result once it has come: a hit then costs no fiber suspension. */
  settled: Exit.Exit<Option.Option<StoredSource>, StoreError> | undefined
}

/**
 * Sources by id and by write key, kept for a short time so that ingest and the dispatcher do not
 * read the store for every request or job. Concurrent callers of one key share one read: a claim
 * of 256 jobs of one source is one query, not 256 queued on the pool. A failed read is not kept.
 *
 * With the settings version (`SettingsVersion`), every cache of the process drops its entries when any admin write is
 * known, made through this process (`invalidate`) or announced by another; without it only this cache's own
 * `invalidate` does, and the time limit bounds the rest.
 */
export const makeSourceCache = (store: SourcesShape, versions?: SettingsVersionShape) => {
  const generation = versions === undefined ? () => 0 : versions.generation
  const byId = new Map<string, Entry>()
  const byWriteKey = new Map<string, Entry>()

  // Every tracking request asks twice (by write key, then by id): a hit is a map look-up on the Clock's time, and the
  // store's read is only built on a miss (building it captures a call-site stack for its span).
  const cached = <K>(
    map: Map<K, Entry>,
    key: K,
    load: () => Effect.Effect<Option.Option<StoredSource>, StoreError>
  ): Effect.Effect<Option.Option<StoredSource>, StoreError> =>
    Effect.clockWith((clock) => {
      const now = clock.currentTimeMillisUnsafe()
      const hit = map.get(key)
      if (hit !== undefined && hit.expiresAt > now && hit.generation === generation()) {
        return hit.settled ?? Deferred.await(hit.source)
      }
      return read(map, key, now, load)
    })

  const read = <K>(
    map: Map<K, Entry>,
    key: K,
    now: number,
    load: () => Effect.Effect<Option.Option<StoredSource>, StoreError>
  ): Effect.Effect<Option.Option<StoredSource>, StoreError> =>
    Effect.gen(function*() {
      const source = yield* Deferred.make<Option.Option<StoredSource>, StoreError>()
      const entry: Entry = {
        source,
        expiresAt: now + sourceCacheTtlMillis,
        generation: generation(),
        settled: undefined
      }
      if (map.size > 10_000) map.clear()
      map.set(key, entry)
      // Uninterruptible: the callers waiting on this read must get an answer even if the first caller goes away.
      const exit = yield* Effect.uninterruptible(
        Effect.tap(Effect.exit(Effect.suspend(load)), (exit) =>
          Effect.suspend(() => {
            if (Exit.isFailure(exit) && map.get(key) === entry) map.delete(key)
            else entry.settled = exit
            return Deferred.done(source, exit)
          }))
      )
      return yield* exit
    })

  return {
    byId: (id: string) => cached(byId, id, () => store.getSource(id)),
    // The store compares the key in constant time; the map lookup only happens for keys that were valid or asked before.
    byWriteKey: (writeKey: string) => cached(byWriteKey, writeKey, () => store.findSourceByWriteKey(writeKey)),
    /** After an admin write was stored: this cache, and with the settings version every other one, drop. */
    invalidate: () =>
      Effect.andThen(
        Effect.sync(() => {
          byId.clear()
          byWriteKey.clear()
        }),
        versions === undefined ? Effect.void : versions.changed
      )
  }
}
