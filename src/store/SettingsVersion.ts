import { Context, Effect, Layer, Redacted } from "effect"
import { StoreError } from "./StoreError.js"

export interface SettingsVersionShape {
  /** This process's settings generation: it changes whenever an admin write is known here, made here or elsewhere. */
  readonly generation: () => number
  /**
   * Called once an admin write (a source, a destination, a rotation, an endpoint enabled or disabled) is stored:
   * every cache of this process drops at once, and the other processes sharing the store are told. Never fails.
   */
  readonly changed: Effect.Effect<void>
}

/**
 * The settings' version: what the caches of settings (`SourceCache`) compare their entries with, so that an admin
 * write applies to the next delivery and ingest request. One process (SQLite) keeps it in memory; on PostgreSQL
 * each write also bumps a shared version and announces it (`pg/PgSettingsVersion`).
 */
export class SettingsVersion extends Context.Service<SettingsVersion, SettingsVersionShape>()(
  "hookrelay/store/SettingsVersion"
) {}

/** A generation in memory; `observe` moves it from outside (another process's write). */
export const makeLocal = () => {
  let generation = 0
  const observe = (): void => {
    generation += 1
  }
  const shape: SettingsVersionShape = { generation: () => generation, changed: Effect.sync(observe) }
  return { ...shape, observe }
}

/** One process owns the store: the version lives in memory. */
export const layerLocal: Layer.Layer<SettingsVersion> = Layer.sync(SettingsVersion, makeLocal)

export interface PgSettingsOptions {
  readonly url: string | Redacted.Redacted
  /** The store's schema: the version row is there, and the channel is named after it. */
  readonly schema?: string | undefined
}

/**
 * Shared through PostgreSQL (a version row, `NOTIFY` on a channel per schema, and a poll as a fallback). Loaded when
 * built, like the PostgreSQL store: `@effect/sql-pg` is an optional dependency.
 */
export const layerPg = (options: PgSettingsOptions): Layer.Layer<SettingsVersion, StoreError> =>
  Layer.unwrap(
    Effect.map(
      Effect.tryPromise({
        try: (): Promise<typeof import("./pg/PgSettingsVersion.js")> => import("./pg/PgSettingsVersion.js"),
        catch: (cause) => new StoreError({ operation: "open", cause })
      }),
      (module) =>
        module.layer({
          url: Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url),
          schema: options.schema
        })
    )
  )
