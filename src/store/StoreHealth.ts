import { Clock, Context, Effect, Layer } from "effect"
import { isStoreUnavailable, type StoreError, storeErrorDetail } from "./StoreError.js"
import { type StoreServices, wrapOperations } from "./StoreOperations.js"

/** What `/readyz` reports about the store. */
export type StoreStatus =
  | { readonly available: true }
  | {
    readonly available: false
    /** `unreachable`: no connection (down, restarting); `full`: it answers but cannot write (full disk). */
    readonly kind: "unreachable" | "full"
    readonly operation: string
    readonly detail: string
    /** Clock milliseconds of the first failure of this outage. */
    readonly since: number
  }

export interface StoreHealthShape {
  readonly status: Effect.Effect<StoreStatus>
  /** Records the outcome of one store call (`operation` is its name in its service). */
  readonly observe: (operation: string, error: StoreError | undefined) => Effect.Effect<void>
}

/**
 * Whether the store can answer, as the calls through it last found: an error that says the store as a whole is gone
 * (`isStoreUnavailable`) starts an outage, logged once; the next call that shows it back ends it, logged once. A full
 * disk still answers reads, so only a call that surely wrote ends that kind of outage.
 */
export class StoreHealth extends Context.Service<StoreHealth, StoreHealthShape>()("hookrelay/StoreHealth") {}

const fullPattern = /SQLITE_FULL|ENOSPC|disk is full|no space left/i

const isFull = (error: StoreError): boolean => {
  const cause = error.cause as { code?: unknown; cause?: { code?: unknown } } | undefined
  const codes = [cause?.code, cause?.cause?.code].filter((code): code is string => typeof code === "string")
  return codes.some((code) => code === "53100" || fullPattern.test(code)) || fullPattern.test(storeErrorDetail(error))
}

/** Calls that cannot succeed without writing to the file: the only proof that a full disk has room again. */
const sureWrites = new Set([
  "enqueue",
  "insertJobs",
  "completeMany",
  "upsertSource",
  "recordAttempts",
  "recordDeletion",
  "applyAudienceChunk",
  "applyTraitChunk"
])

export const make: Effect.Effect<StoreHealthShape> = Effect.gen(function*() {
  const clock = yield* Clock.Clock
  let down: Extract<StoreStatus, { available: false }> | undefined

  const observe = (operation: string, error: StoreError | undefined): Effect.Effect<void> => {
    if (error === undefined) {
      if (down === undefined || (down.kind === "full" && !sureWrites.has(operation))) return Effect.void
      const seconds = Math.max(0, clock.currentTimeMillisUnsafe() - down.since) / 1000
      down = undefined
      return Effect.logInfo(`the store is available again after ${seconds.toFixed(1)} s`)
    }
    if (!isStoreUnavailable(error) && !isFull(error)) return Effect.void
    const kind = isFull(error) ? "full" : "unreachable"
    // An outage already logged stays one log line, whatever its kind turns into.
    if (down !== undefined) {
      if (down.kind !== kind) down = { ...down, kind, operation, detail: storeErrorDetail(error) }
      return Effect.void
    }
    down = {
      available: false,
      kind,
      operation,
      detail: storeErrorDetail(error),
      since: clock.currentTimeMillisUnsafe()
    }
    return Effect.logError(`the store is unavailable (${kind}): ${down.detail}`).pipe(
      Effect.annotateLogs({ operation, retry: "requests are answered 503 until it is back" })
    )
  }

  return {
    status: Effect.sync((): StoreStatus => down ?? { available: true }),
    observe
  }
})

/** Every call of the store's services reports its outcome to `health`. */
export const observed = (
  store: Context.Context<StoreServices>,
  health: StoreHealthShape
): Context.Context<StoreServices> =>
  wrapOperations(store, (operation, call) => (...args) => {
    const result = call(...args)
    if (!Effect.isEffect(result)) return result
    return (result as Effect.Effect<unknown, StoreError>).pipe(
      Effect.tapError((error) =>
        typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "StoreError"
          ? health.observe(operation, error)
          : Effect.void
      ),
      Effect.tap(() => health.observe(operation, undefined))
    )
  })

/** The store of `store`, observed, beside the `StoreHealth` it reports to. */
export const layerOver = <E, R>(
  store: Layer.Layer<StoreServices, E, R>
): Layer.Layer<StoreServices | StoreHealth, E, R> =>
  Layer.unwrap(Effect.map(make, (health) =>
    Layer.merge(
      Layer.succeed(StoreHealth, health),
      Layer.effectContext(Effect.map(Effect.context<StoreServices>(), (inner) => observed(inner, health))).pipe(
        Layer.provide(store)
      )
    )))
