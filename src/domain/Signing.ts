import * as Schema from "effect/Schema"
import { createPrivateKey, createPublicKey } from "node:crypto"
import type { KeyObject } from "node:crypto"

/**
 * How a source's deliveries are signed: `segment` is REFERENCE §4's `X-Signature` (the default), `standard` the Standard
 * Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), `both` sends both.
 */
export const SigningScheme = Schema.Literals(["segment", "standard", "both"]).annotate({
  message: "must be \"segment\", \"standard\" or \"both\""
})
export type SigningScheme = typeof SigningScheme.Type

export const secretPrefix = "whsec_"
export const publicKeyPrefix = "whpk_"
export const privateKeyPrefix = "whsk_"

/** The spec's bounds on a generated or given secret's key: 24 to 64 bytes. */
export const secretBytes = { min: 24, max: 64 } as const

/** A source holds at most this many signing secrets (a rotation prunes expired ones first). */
export const maxSigningSecrets = 10

const base64 = /^[A-Za-z0-9+/]+={0,2}$/

const base64After = (text: string, prefix: string): Buffer | string => {
  if (!text.startsWith(prefix)) return `must start with "${prefix}"`
  const encoded = text.slice(prefix.length)
  if (!base64.test(encoded) || encoded.length % 4 !== 0) return `must be "${prefix}" followed by base64`
  return Buffer.from(encoded, "base64")
}

/** The key bytes of a `whsec_` secret, or why it is not one. */
export const decodeSecret = (secret: string): Uint8Array | string => {
  const key = base64After(secret, secretPrefix)
  if (typeof key === "string") return key
  if (key.length < secretBytes.min || key.length > secretBytes.max) {
    return `must hold ${secretBytes.min} to ${secretBytes.max} bytes after "${secretPrefix}" (got ${key.length})`
  }
  return key
}

// PKCS#8 DER of an ed25519 private key is this fixed prefix followed by its 32-byte seed.
const pkcs8Prefix = Buffer.from("302e020100300506032b657004220420", "hex")

/** The ed25519 private key of a `whsk_` key (base64 of its 32-byte seed), or why it is not one. */
export const decodePrivateKey = (key: string): KeyObject | string => {
  const seed = base64After(key, privateKeyPrefix)
  if (typeof seed === "string") return seed
  if (seed.length !== 32) return `must hold 32 bytes after "${privateKeyPrefix}" (got ${seed.length})`
  return createPrivateKey({ key: Buffer.concat([pkcs8Prefix, seed]), format: "der", type: "pkcs8" })
}

/** The `whsk_` form of an ed25519 private key, for storage. */
export const encodePrivateKey = (key: KeyObject): string =>
  privateKeyPrefix + key.export({ format: "der", type: "pkcs8" }).subarray(-32).toString("base64")

/** The `whpk_` public key receivers verify `v1a` signatures with. */
export const publicKeyOf = (key: KeyObject): string =>
  publicKeyPrefix + createPublicKey(key).export({ format: "der", type: "spki" }).subarray(-32).toString("base64")

const isoTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

/** An instant as ISO 8601 with a time zone (`2026-01-31T12:00:00Z`). */
export const IsoTime = Schema.String.check(
  Schema.makeFilter((value) =>
    (isoTime.test(value) && !Number.isNaN(Date.parse(value))) ||
    "must be an ISO 8601 time with a time zone, such as 2026-01-31T12:00:00Z"
  )
)

export const WebhookSecret = Schema.String.check(
  Schema.makeFilter((secret) => {
    const key = decodeSecret(secret)
    return typeof key !== "string" || key
  })
)

export const SigningKey = Schema.String.check(
  Schema.makeFilter((key) => {
    const decoded = decodePrivateKey(key)
    return typeof decoded !== "string" || decoded
  })
)

/**
 * One Standard Webhooks secret. The operator gives `secret` (and maybe `expiresAt`); `id` and `createdAt` are set
 * when it is saved. An expired secret signs nothing.
 */
export const SigningSecret = Schema.Struct({
  secret: WebhookSecret,
  expiresAt: Schema.optionalKey(IsoTime),
  id: Schema.optionalKey(Schema.String),
  createdAt: Schema.optionalKey(IsoTime)
})
export type SigningSecret = typeof SigningSecret.Type

export const SigningSecrets = Schema.Array(SigningSecret).check(
  Schema.makeFilter((secrets) =>
    secrets.length <= maxSigningSecrets || `must hold at most ${maxSigningSecrets} secrets (got ${secrets.length})`
  )
)

/** The signing fields of a source's webhook settings (`WebhookSettings` spreads them). */
export const signingFields = {
  signing: Schema.optionalKey(SigningScheme),
  signingSecrets: Schema.optionalKey(SigningSecrets),
  /** Adds a `v1a` (ed25519) signature; hookrelay keeps the private key, receivers get its `whpk_` public key. */
  asymmetric: Schema.optionalKey(Schema.Boolean),
  /** The `whsk_` private key of `asymmetric`: generated on save when not given. */
  signingKey: Schema.optionalKey(SigningKey)
}

export interface SigningSettings {
  readonly signing?: SigningScheme
  readonly sharedSecret?: string
  readonly signingSecrets?: ReadonlyArray<SigningSecret>
  readonly asymmetric?: boolean
  readonly signingKey?: string
}

/** Whether the settings send the Standard Webhooks headers. */
export const signsStandard = (settings: SigningSettings): boolean =>
  settings.signing === "standard" || settings.signing === "both"

/** Whether the settings send `X-Signature` (REFERENCE §4) when a shared secret is set. */
export const signsSegment = (settings: SigningSettings): boolean =>
  settings.signing === undefined || settings.signing === "segment" || settings.signing === "both"

/** Epoch ms of a secret's expiry; `Infinity` when it has none. */
export const expiryOf = (secret: SigningSecret): number =>
  secret.expiresAt === undefined ? Infinity : Date.parse(secret.expiresAt)

/** The `whpk_` public key receivers verify a source's `v1a` signatures with; undefined when it signs none. */
export const signingPublicKey = (settings: SigningSettings): string | undefined => {
  if (settings.asymmetric !== true || settings.signingKey === undefined) return undefined
  const key = decodePrivateKey(settings.signingKey)
  return typeof key === "string" ? undefined : publicKeyOf(key)
}
