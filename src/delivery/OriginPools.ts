import { Duration, Effect } from "effect"
import type { Scope } from "effect"
import { Pool } from "undici"
import type { Dispatcher } from "undici"

/**
 * One undici `Pool` per origin, kept while the origin is in use.
 *
 * undici's `Agent` forgets an origin's pool whenever a connection attempt fails while no connection is open, and builds
 * a new one (a 2 048-slot queue, a client, listeners) for the next request: against an endpoint that is down, every
 * attempt built and dropped a pool, and the retries held that garbage past young collections until a full one
 * (bench/NOTES.md, Delivery).
 * Here a pool stays until a whole sweep interval has passed in which it was not used and it held no connection and no
 * request; then it is closed. Idle origins still cost nothing after a sweep or two.
 */
export interface OriginPools {
  readonly dispatch: (
    options: Dispatcher.DispatchOptions & { readonly origin: string },
    handler: Dispatcher.DispatchHandler
  ) => void
  /** Origins with a pool now (tests read it). */
  readonly size: () => number
}

interface Entry {
  readonly pool: Pool
  /** Dispatched to since the last sweep. */
  used: boolean
}

export const defaultSweepInterval = Duration.seconds(10)

export const make = (
  poolOptions: Pool.Options,
  sweepInterval: Duration.Input = defaultSweepInterval
): Effect.Effect<OriginPools, never, Scope.Scope> =>
  Effect.gen(function*() {
    const entries = new Map<string, Entry>()

    const sweep = Effect.sync(() => {
      for (const [origin, entry] of entries) {
        if (entry.used) {
          entry.used = false
          continue
        }
        const stats = entry.pool.stats
        if (stats.connected === 0 && stats.size === 0) {
          entries.delete(origin)
          // Nothing is queued or open: closing resolves at once. A failure to close an unused pool changes nothing.
          entry.pool.close().catch(() => undefined)
        }
      }
    })
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(sweepInterval), sweep)))
    yield* Effect.addFinalizer(() =>
      Effect.promise(() =>
        Promise.all(Array.from(entries.values(), (entry) => entry.pool.destroy().catch(() => undefined)))
      )
    )

    const poolFor = (origin: string): Pool => {
      // Only a sweep closes a pool, and it forgets it first.
      const entry = entries.get(origin)
      if (entry !== undefined) {
        entry.used = true
        return entry.pool
      }
      const pool = new Pool(origin, poolOptions)
      entries.set(origin, { pool, used: true })
      return pool
    }

    return {
      dispatch: (options, handler) => {
        poolFor(options.origin).dispatch(options, handler)
      },
      size: () => entries.size
    }
  })
