import { Clock, Effect, Option } from "effect"
import type { StoredSource, StoreShape } from "./Model.js"
import type { StoreError } from "./StoreError.js"

/** How long a source read from the store is trusted. Other processes' admin changes show within it. */
export const sourceCacheTtlMillis = 2_000

interface Entry {
  readonly source: Option.Option<StoredSource>
  readonly expiresAt: number
}

/**
 * Sources by id and by write key, kept for a short time so that ingest does not read the store
 * for every request. A change made through this process invalidates at once.
 */
export const makeSourceCache = (store: StoreShape) => {
  const byId = new Map<string, Entry>()
  const byWriteKey = new Map<string, Entry>()

  const cached = <K>(
    map: Map<K, Entry>,
    key: K,
    load: Effect.Effect<Option.Option<StoredSource>, StoreError>
  ): Effect.Effect<Option.Option<StoredSource>, StoreError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const hit = map.get(key)
      if (hit !== undefined && hit.expiresAt > now) return Effect.succeed(hit.source)
      return Effect.tap(load, (source) =>
        Effect.sync(() => {
          if (map.size > 10_000) map.clear()
          map.set(key, { source, expiresAt: now + sourceCacheTtlMillis })
        }))
    })

  return {
    byId: (id: string) => cached(byId, id, store.getSource(id)),
    // The store compares the key in constant time; the map lookup only happens for keys that were valid or asked before.
    byWriteKey: (writeKey: string) => cached(byWriteKey, writeKey, store.findSourceByWriteKey(writeKey)),
    invalidate: () =>
      Effect.sync(() => {
        byId.clear()
        byWriteKey.clear()
      })
  }
}
