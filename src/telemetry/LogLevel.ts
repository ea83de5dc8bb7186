import { Config, LogLevel, Schema } from "effect"

/** The names `HOOKRELAY_LOG_LEVEL` accepts, in any case. */
export const logLevelNames = ["trace", "debug", "info", "warning", "error", "fatal", "none"] as const

const levels: Record<typeof logLevelNames[number], LogLevel.LogLevel> = {
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None
}

const LogLevelName = Schema.compose(Schema.Lowercase, Schema.Literal(...logLevelNames))

/** `HOOKRELAY_LOG_LEVEL` (default `info`): the least severe level the server logs. A wrong name fails the start. */
export const logLevelConfig: Config.Config<LogLevel.LogLevel> = Schema.Config("HOOKRELAY_LOG_LEVEL", LogLevelName).pipe(
  Config.withDefault("info" as const),
  Config.map((name) => levels[name])
)
