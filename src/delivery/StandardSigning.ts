import type { KeyObject } from "node:crypto"
import { decodePrivateKey, decodeSecret, expiryOf, signsStandard } from "../domain/Signing.js"
import type { SigningSettings } from "../domain/Signing.js"
import type { PreparedEndpoint } from "./Attempt.js"
import { signV1, signV1a, standardHeaders, webhookId } from "./StandardWebhooks.js"

/** A source's Standard Webhooks keys, decoded once per settings object. */
interface Signer {
  readonly secrets: ReadonlyArray<{ readonly key: Uint8Array; readonly expiresAt: number }>
  readonly privateKey: KeyObject | undefined
}

// Settings are read once per claim and shared by its jobs: the keys are decoded once per settings object, not per job.
const signers = new WeakMap<SigningSettings, Signer>()

const signerOf = (settings: SigningSettings): Signer => {
  let signer = signers.get(settings)
  if (signer === undefined) {
    const secrets: Array<Signer["secrets"][number]> = []
    for (const secret of settings.signingSecrets ?? []) {
      const key = decodeSecret(secret.secret)
      // Validated on save: a key that no longer decodes signs nothing rather than failing the delivery.
      if (typeof key !== "string") secrets.push({ key, expiresAt: expiryOf(secret) })
    }
    const privateKey = settings.asymmetric === true && settings.signingKey !== undefined
      ? decodePrivateKey(settings.signingKey)
      : undefined
    signer = { secrets, privateKey: typeof privateKey === "string" ? undefined : privateKey }
    signers.set(settings, signer)
  }
  return signer
}

/** Adds the Standard Webhooks headers, as of an attempt's start (epoch ms), to an endpoint prepared for a job. */
export type StandardStamp = (endpoint: PreparedEndpoint, now: number) => PreparedEndpoint

/**
 * The stamp of one job, or `undefined` when its source does not sign the Standard Webhooks way (nothing is built
 * then). `webhook-id` is fixed for the job; the signatures depend only on the timestamp (in seconds) and on which
 * secrets are still valid, so one value is kept and reused by attempts within the same second (other URLs, retries).
 */
export const standardStamp = (
  settings: SigningSettings,
  messageId: string,
  body: Uint8Array
): StandardStamp | undefined => {
  if (!signsStandard(settings)) return undefined
  const signer = signerOf(settings)
  const id = webhookId(messageId)
  let lastSecond = -1
  let lastValid = -1
  let lastSignature = ""
  return (endpoint, now) => {
    const seconds = Math.floor(now / 1000)
    // Expiry only ever removes secrets, so within one second the count of valid ones tells the set apart.
    let valid = 0
    for (const secret of signer.secrets) if (secret.expiresAt > now) valid += 1
    if (seconds !== lastSecond || valid !== lastValid) {
      const signatures: Array<string> = []
      for (const secret of signer.secrets) {
        if (secret.expiresAt > now) signatures.push(signV1(secret.key, id, seconds, body))
      }
      if (signer.privateKey !== undefined) signatures.push(signV1a(signer.privateKey, id, seconds, body))
      lastSecond = seconds
      lastValid = valid
      lastSignature = signatures.join(" ")
    }
    const headers = [...endpoint.request.headers, standardHeaders.id, id, standardHeaders.timestamp, String(seconds)]
    // Every secret expired and no key: nothing signs, so no signature header rather than an empty one.
    if (lastSignature !== "") headers.push(standardHeaders.signature, lastSignature)
    return { url: endpoint.url, request: { ...endpoint.request, headers } }
  }
}
