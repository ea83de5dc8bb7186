import { Config } from "effect"
import type { LogLevel } from "effect"
import { oneOfConfig } from "./ConfigChoices.js"

/** The names `HOOKRELAY_LOG_LEVEL` accepts, in any case. */
export const logLevelNames = ["trace", "debug", "info", "warning", "error", "fatal", "none"] as const

const levels: Record<typeof logLevelNames[number], LogLevel.LogLevel> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
}

/** `HOOKRELAY_LOG_LEVEL` (default `info`): the least severe level the server logs. A wrong name fails the start. */
export const logLevelConfig: Config.Config<LogLevel.LogLevel> = oneOfConfig(
  "HOOKRELAY_LOG_LEVEL",
  logLevelNames,
  "info"
).pipe(Config.map((name) => levels[name]))
