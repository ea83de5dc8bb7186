import { Cause, ConfigProvider, Effect, Exit, Logger } from "effect"
import { declaredEnvironment } from "./config/DeclaredEnvironment.js"
import { secretKeysProblem } from "./store/SecretBox.js"
import { layerFromConfigSealed } from "./store/SecretKeysConfig.js"
import type { SealReport } from "./store/SecretsAtRest.js"
import { Sources } from "./store/Sources.js"

/**
 * `hookrelay rekey` (docs/SECURITY.md): opens the store `DATABASE_URL` selects with the keys of `HOOKRELAY_SECRET_KEYS`
 * (or the SQLite key file), which checks every stored secret, and seals every one under another key than the first
 * with the first, in one transaction; then exits.
 */
export const rekey: Effect.Effect<SealReport, unknown, Sources> = Effect.flatMap(
  Sources,
  (sources) => sources.sealSecrets("all")
)

const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0]

/** Runs `rekey` on the configured store: one line on stdout when done, or on stderr when refused; the exit code. */
export const runRekey = async (): Promise<number> => {
  const exit = await Effect.runPromiseExit(
    rekey.pipe(
      Effect.provide(layerFromConfigSealed()),
      Effect.provide(Logger.layer([Logger.consoleJson])),
      Effect.provideService(ConfigProvider.ConfigProvider, declaredEnvironment())
    )
  )
  if (Exit.isSuccess(exit)) {
    process.stdout.write(
      `hookrelay: sealed ${exit.value.sealed} stored secrets again with the first key (${exit.value.sources} sources)\n`
    )
    return 0
  }
  const error = Cause.squash(exit.cause)
  process.stderr.write(`hookrelay: rekey failed: ${secretKeysProblem(error) ?? firstLine(error)}\n`)
  return 1
}
