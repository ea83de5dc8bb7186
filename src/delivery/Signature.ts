import { createHmac } from "node:crypto"

/** The request header that carries the body's signature (REFERENCE §4). */
export const signatureHeader = "X-Signature"

/**
 * `X-Signature` of a delivered body: lowercase hex HMAC-SHA1, keyed by the UTF-8 bytes of the shared secret, over
 * the exact bytes sent (REFERENCE §4, `vectors/signature.json`). Sign the same `Uint8Array` that goes on the wire, never a
 * re-serialization of it.
 */
export const sign = (secret: string, body: Uint8Array): string =>
  // A string key is taken as its UTF-8 bytes by node:crypto (checked by the vectors' non-ASCII case).
  createHmac("sha1", secret).update(body).digest("hex")

/**
 * The signature to send for a destination's secret, or `undefined` when no secret is set. An empty secret counts as
 * not set (`vectors/signature.json`, `signingSecret` in domain/Settings).
 */
export const signatureFor = (secret: string | undefined, body: Uint8Array): string | undefined =>
  secret === undefined || secret === "" ? undefined : sign(secret, body)
