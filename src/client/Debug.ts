import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as References from "effect/References"

/**
 * Whether `DEBUG` (read through `Config`, so from the environment by default) asks for the
 * client's log: it contains `analytics` (`DEBUG=analytics`, `DEBUG=app,analytics`) or is `*`.
 */
export const debugEnabled: Config.Config<boolean> = Config.String("DEBUG").pipe(
  Config.withDefault(""),
  Config.map((value) => value.includes("analytics") || value.split(/[\s,]+/).includes("*"))
)

/** Logs at debug level through the application's logger when enabled; otherwise does nothing. */
export type DebugLog = (message: string) => Effect.Effect<void>

/** The client's log: silent unless `enabled` (the library never logs by default). */
export const makeDebugLog = (enabled: boolean): DebugLog =>
  enabled
    ? (message) =>
      Effect.logDebug(message).pipe(
        Effect.annotateLogs("module", "analytics"),
        Effect.provideService(References.MinimumLogLevel, "Debug")
      )
    : () => Effect.void
