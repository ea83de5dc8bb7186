import { Config, Effect, Layer, Option, Redacted, Result } from "effect"
import { randomBytes } from "node:crypto"
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import {
  generateSecretKey,
  makeSecretBox,
  parseSecretKeys,
  SecretBox,
  type SecretBoxShape,
  type SecretKey,
  SecretKeysError
} from "./SecretBox.js"
import * as Store from "./Store.js"
import { dataDirectoryConfig, postgresUrlConfig } from "./StoreConfig.js"
import type { StoreError } from "./StoreError.js"
import type { StoreServices } from "./StoreOperations.js"

/** The key file of a SQLite store without `HOOKRELAY_SECRET_KEYS`, in its data directory. */
export const secretKeysFileName = "secret-keys"

const variable = "HOOKRELAY_SECRET_KEYS"

const problem = (message: string) => new SecretKeysError({ message })

const fromText = (text: string, where: string): Effect.Effect<ReadonlyArray<SecretKey>, SecretKeysError> =>
  Result.match(parseSecretKeys(text.trim()), {
    onFailure: (message) => Effect.fail(problem(`${where}: ${message}`)),
    onSuccess: Effect.succeed
  })

/** The key file's keys; the file is made (mode 0600) with one fresh key when missing. */
const keyFile = (directory: string) =>
  Effect.gen(function*() {
    const path = Path.resolve(directory, secretKeysFileName)
    const made = yield* Effect.try({
      try: () => {
        mkdirSync(Path.dirname(path), { recursive: true })
        try {
          // Exclusive: two processes starting on one directory cannot both make a key.
          writeFileSync(path, `${generateSecretKey(`local-${randomBytes(4).toString("hex")}`)}\n`, {
            mode: 0o600,
            flag: "wx"
          })
          chmodSync(path, 0o600)
          return true
        } catch (error) {
          if ((error as { code?: unknown }).code === "EEXIST") return false
          throw error
        }
      },
      catch: (error) => problem(`cannot make the key file ${path}: ${(error as Error).message}`)
    })
    const text = yield* Effect.try({
      try: () => readFileSync(path, "utf8"),
      catch: (error) => problem(`cannot read the key file ${path}: ${(error as Error).message}`)
    })
    const keys = yield* fromText(text, path)
    const loose = (statSync(path).mode & 0o077) !== 0
    return { path, keys, made, loose }
  })

/**
 * The server's box (docs/SECURITY.md): the keys of `HOOKRELAY_SECRET_KEYS` (comma-separated `id:base64`, the first
 * seals, all open); without it, on SQLite, the key file of the data directory, made at the first start; on PostgreSQL
 * a refusal, since every process sharing the database must hold the same keys. `decrypted` counts decryptions.
 */
export const secretBoxFromConfig = (
  decrypted: Effect.Effect<void> = Effect.void
): Effect.Effect<SecretBoxShape, SecretKeysError | Config.ConfigError> =>
  Effect.gen(function*() {
    const given = Option.filter(
      yield* Config.option(Config.Redacted(variable)),
      (text) => Redacted.value(text).trim() !== ""
    )
    if (Option.isSome(given)) {
      const keys = yield* fromText(Redacted.value(given.value), variable)
      yield* Effect.logInfo(`stored secrets are sealed with key "${keys[0]!.id}" of ${variable}`)
      return makeSecretBox(keys, decrypted)
    }
    if (Option.isSome(yield* postgresUrlConfig)) {
      return yield* problem(
        `${variable} is required with PostgreSQL: every process sharing the database must hold the same keys`
      )
    }
    const file = yield* keyFile(yield* dataDirectoryConfig)
    yield* Effect.logInfo(
      `stored secrets are sealed with key "${file.keys[0]!.id}" of ${file.path}` +
        (file.made ? " (made now: keep it with the database, and back it up)" : "")
    )
    if (file.loose) yield* Effect.logWarning(`${file.path} is readable by other users: chmod 600 it`)
    return makeSecretBox(file.keys, decrypted)
  })

/** The store `DATABASE_URL` selects (`Store.layerFromConfig`), sealing its secrets with the configured box. */
export const layerFromConfigSealed = (
  decrypted?: Effect.Effect<void>
): Layer.Layer<StoreServices, StoreError | SecretKeysError | Config.ConfigError> =>
  Layer.unwrap(Effect.map(
    secretBoxFromConfig(decrypted),
    (box) => Layer.provide(Store.layerFromConfig, Layer.succeed(SecretBox)(box))
  ))
