import { Context, Data, Effect, Result } from "effect"
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"

/**
 * Secrets at rest (docs/SECURITY.md): a stored secret is `hrenc:v1:<keyId>:<base64url(nonce | ciphertext | tag)>`,
 * AES-256-GCM under the key `keyId` with a fresh 12-byte nonce, the `hrenc:v1:<keyId>:` prefix bound as additional
 * data. The first key seals; every key opens, so keys rotate without downtime. A value without the prefix is plain
 * text (written by an earlier build) and is read as it is.
 */

export const sealedPrefix = "hrenc:v1:"
export const keyBytes = 32
const nonceBytes = 12
const tagBytes = 16
const keyIdPattern = /^[A-Za-z0-9_-]{1,32}$/

/** A refused key configuration, or a stored value the configured keys cannot open: one line, no secret in it. */
export class SecretKeysError extends Data.TaggedError("SecretKeysError")<{ readonly message: string }> {}

export interface SecretKey {
  readonly id: string
  readonly key: Uint8Array
}

/** The keys of `HOOKRELAY_SECRET_KEYS`' form, comma-separated `id:base64` of 32 bytes each, or why not. */
export const parseSecretKeys = (text: string): Result.Result<ReadonlyArray<SecretKey>, string> => {
  const entries = text.split(",").map((entry) => entry.trim())
  const keys: Array<SecretKey> = []
  for (const [index, entry] of entries.entries()) {
    const at = `entry ${index + 1}`
    const colon = entry.indexOf(":")
    if (colon < 0) return Result.fail(`${at} must be <id>:<base64 of ${keyBytes} bytes>`)
    const id = entry.slice(0, colon)
    const encoded = entry.slice(colon + 1)
    if (!keyIdPattern.test(id)) return Result.fail(`${at}: the key id must be 1 to 32 letters, digits, '_' or '-'`)
    if (keys.some((key) => key.id === id)) return Result.fail(`${at}: the key id "${id}" is given twice`)
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) return Result.fail(`${at} (key "${id}") is not base64`)
    const key = Buffer.from(encoded, encoded.includes("-") || encoded.includes("_") ? "base64url" : "base64")
    if (key.length !== keyBytes) {
      return Result.fail(`${at} (key "${id}") must hold ${keyBytes} bytes (got ${key.length})`)
    }
    keys.push({ id, key })
  }
  return Result.succeed(keys)
}

/** A fresh key in the `id:base64` form the variable and the SQLite key file take. */
export const generateSecretKey = (id: string): string => `${id}:${randomBytes(keyBytes).toString("base64")}`

export interface SecretBoxShape {
  /** The configured key ids, the sealing one first; none: values are stored as they are. */
  readonly keyIds: ReadonlyArray<string>
  /** `plain` sealed with the first key; unchanged when there is no key. */
  readonly seal: (plain: string) => string
  /** The plain text of a stored value: a sealed one opened (once per distinct value), a plain one as it is. */
  readonly open: (stored: string) => Effect.Effect<string, SecretKeysError>
  /** Whether `stored` is sealed with the first key (nothing left for a re-key to do). */
  readonly sealedWithFirstKey: (stored: string) => boolean
}

export const isSealed = (stored: string): boolean => stored.startsWith(sealedPrefix)

/** The key id of a sealed value; undefined for a plain one. */
export const sealedKeyId = (stored: string): string | undefined => {
  if (!isSealed(stored)) return undefined
  const end = stored.indexOf(":", sealedPrefix.length)
  return end < 0 ? undefined : stored.slice(sealedPrefix.length, end)
}

// Bounds the opened values kept: past it they are dropped all at once and opened again when read.
const maxOpened = 10_000

/**
 * A box over `keys` (the first seals). `decrypted` runs after each actual decryption (the metric); an opened value is
 * kept by its stored text, so a source read again (its cache expired, another process's write) decrypts nothing new.
 */
export const makeSecretBox = (
  keys: ReadonlyArray<SecretKey>,
  decrypted: Effect.Effect<void> = Effect.void
): SecretBoxShape => {
  const byId = new Map(keys.map((key) => [key.id, key.key]))
  const first = keys[0]
  const opened = new Map<string, string>()

  const seal = (plain: string): string => {
    if (first === undefined) return plain
    const prefix = `${sealedPrefix}${first.id}:`
    const nonce = randomBytes(nonceBytes)
    const cipher = createCipheriv("aes-256-gcm", first.key, nonce)
    cipher.setAAD(Buffer.from(prefix, "utf8"))
    const body = Buffer.concat([nonce, cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()])
    return prefix + body.toString("base64url")
  }

  const decrypt = (stored: string): Result.Result<string, string> => {
    const keyId = sealedKeyId(stored)
    if (keyId === undefined) return Result.fail("a stored secret is not in the hrenc:v1:<keyId>:<data> form")
    const key = byId.get(keyId)
    if (key === undefined) {
      return Result.fail(
        first === undefined
          ? `a stored secret is sealed with key "${keyId}" but HOOKRELAY_SECRET_KEYS is not set`
          : `a stored secret is sealed with key "${keyId}", which HOOKRELAY_SECRET_KEYS does not hold`
      )
    }
    const prefix = `${sealedPrefix}${keyId}:`
    const body = Buffer.from(stored.slice(prefix.length), "base64url")
    if (body.length < nonceBytes + tagBytes) {
      return Result.fail(`a stored secret sealed with key "${keyId}" is cut short`)
    }
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, body.subarray(0, nonceBytes))
      decipher.setAAD(Buffer.from(prefix, "utf8"))
      decipher.setAuthTag(body.subarray(body.length - tagBytes))
      const plain = Buffer.concat([
        decipher.update(body.subarray(nonceBytes, body.length - tagBytes)),
        decipher.final()
      ])
      return Result.succeed(plain.toString("utf8"))
    } catch {
      return Result.fail(
        `a stored secret does not open with key "${keyId}" (a different key under that id, or altered)`
      )
    }
  }

  const open = (stored: string): Effect.Effect<string, SecretKeysError> => {
    if (!isSealed(stored)) return Effect.succeed(stored)
    const known = opened.get(stored)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.suspend(() => {
      const result = decrypt(stored)
      if (Result.isFailure(result)) return Effect.fail(new SecretKeysError({ message: result.failure }))
      if (opened.size >= maxOpened) opened.clear()
      opened.set(stored, result.success)
      return Effect.as(decrypted, result.success)
    })
  }

  return {
    keyIds: keys.map((key) => key.id),
    seal,
    open,
    sealedWithFirstKey: (stored) => first !== undefined && sealedKeyId(stored) === first.id
  }
}

/**
 * The box the store seals and opens secrets with, read once when a store is built. The default holds no key: values
 * are written as they are, and a sealed one cannot be read (the start says so).
 */
export const SecretBox = Context.Reference<SecretBoxShape>("hookrelay/store/SecretBox", {
  defaultValue: () => makeSecretBox([])
})

/** The message of the `SecretKeysError` behind a failure (a store's open wraps it), to print as the one line. */
export const secretKeysProblem = (failure: unknown): string | undefined => {
  for (let cause = failure, depth = 0; typeof cause === "object" && cause !== null && depth < 8; depth += 1) {
    if (cause instanceof SecretKeysError) return cause.message
    cause = (cause as { cause?: unknown }).cause
  }
  return undefined
}
