import { createHmac, generateKeyPairSync, randomBytes, sign as cryptoSign } from "node:crypto"
import type { KeyObject } from "node:crypto"

/**
 * The Standard Webhooks scheme (standardwebhooks.com): `webhook-id`, `webhook-timestamp` and `webhook-signature`,
 * where each signature covers `id.timestamp.body`. `v1` is HMAC-SHA256 keyed by a `whsec_` secret; `v1a` is ed25519,
 * verified with a `whpk_` public key. One implementation for deliveries and operator events.
 */
export const standardHeaders = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature"
} as const

export const secretPrefix = "whsec_"
export const publicKeyPrefix = "whpk_"
export const privateKeyPrefix = "whsk_"

/** The spec's bounds on a generated or given secret's key: 24 to 64 bytes. */
export const secretBytes = { min: 24, max: 64 } as const

const base64 = /^[A-Za-z0-9+/]+={0,2}$/

/** The key bytes of a `whsec_` secret, or why it is not one. */
export const decodeSecret = (secret: string): Uint8Array | string => {
  if (!secret.startsWith(secretPrefix)) return `must start with "${secretPrefix}"`
  const encoded = secret.slice(secretPrefix.length)
  if (!base64.test(encoded) || encoded.length % 4 !== 0) return `must be "${secretPrefix}" followed by base64`
  const key = Buffer.from(encoded, "base64")
  if (key.length < secretBytes.min || key.length > secretBytes.max) {
    return `must hold ${secretBytes.min} to ${secretBytes.max} bytes after "${secretPrefix}" (got ${key.length})`
  }
  return key
}

/** A new `whsec_` secret of 32 random bytes. */
export const generateSecret = (): string => secretPrefix + randomBytes(32).toString("base64")

const encoder = new TextEncoder()

/** The signed content: `id.timestamp.body`, over the exact body bytes sent. */
const signedContent = (id: string, timestamp: number, body: Uint8Array): Buffer =>
  Buffer.concat([encoder.encode(`${id}.${timestamp}.`), body])

/** `v1,<base64 HMAC-SHA256>` keyed by the decoded secret. `timestamp` is in seconds. */
export const signV1 = (key: Uint8Array, id: string, timestamp: number, body: Uint8Array): string =>
  "v1," + createHmac("sha256", key).update(signedContent(id, timestamp, body)).digest("base64")

/** `v1a,<base64 ed25519 signature>` made with the private key. */
export const signV1a = (privateKey: KeyObject, id: string, timestamp: number, body: Uint8Array): string =>
  "v1a," + cryptoSign(null, signedContent(id, timestamp, body), privateKey).toString("base64")

/** A new ed25519 key pair: the public key as `whpk_` + base64 of its 32 raw bytes, the private key as a KeyObject. */
export const generateSigningKeyPair = (): { readonly publicKey: string; readonly privateKey: KeyObject } => {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  // The raw key is the last 32 bytes of the SPKI DER encoding.
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32)
  return { publicKey: publicKeyPrefix + raw.toString("base64"), privateKey }
}
