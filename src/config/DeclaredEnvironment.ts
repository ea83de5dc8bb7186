import { ConfigProvider, Effect } from "effect"
import { isServerVariable } from "./Environment.js"

/**
 * The process environment as the server's `Config` reads it: the variables `Environment` declares (and the standard
 * OTEL_* group) are read as they are; reading any other one fails the start with the variable named, so that a
 * setting cannot exist without its line in `--help` and the README.
 */
export const declaredEnvironment = (
  environment: ConfigProvider.ConfigProvider = ConfigProvider.fromEnv()
): ConfigProvider.ConfigProvider =>
  ConfigProvider.make((path) => {
    const name = String(path[0] ?? "")
    return isServerVariable(name)
      ? environment.load(path)
      : Effect.fail(
        new ConfigProvider.SourceError({
          message: `${name} is not in the server's configuration table (src/config/Environment.ts)`
        })
      )
  })
