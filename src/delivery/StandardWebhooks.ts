import { createHmac, generateKeyPairSync, randomBytes, sign as cryptoSign } from "node:crypto"
import type { KeyObject } from "node:crypto"
import { publicKeyOf, secretPrefix } from "../domain/Signing.js"

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

// The key formats are domain rules (settings validate them); the signer re-exports them as its own.
export { decodeSecret, privateKeyPrefix, publicKeyPrefix, secretBytes, secretPrefix } from "../domain/Signing.js"

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
  const { privateKey } = generateKeyPairSync("ed25519")
  return { publicKey: publicKeyOf(privateKey), privateKey }
}

// Visible ASCII: what a header value carries as is.
const headerSafe = /^[\x21-\x7e]+$/

/**
 * The `webhook-id` of a job: its message id (stable across retries, replays and URLs), percent-encoded when it holds
 * characters a header cannot carry as is.
 */
export const webhookId = (messageId: string): string =>
  headerSafe.test(messageId) ? messageId : encodeURIComponent(messageId)
