import { createPublicKey, verify } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { vi } from "vitest"
import type { ReceivedRequest } from "./support.js"

/** The Standard Webhooks headers of a delivered request, as a receiver passes them to `standardwebhooks`. */
export const standardHeadersOf = (request: ReceivedRequest): Record<string, string> => ({
  "webhook-id": String(request.headers["webhook-id"]),
  "webhook-timestamp": String(request.headers["webhook-timestamp"]),
  "webhook-signature": String(request.headers["webhook-signature"])
})

/**
 * Whether the `standardwebhooks` package (not our signer) accepts the request with `secret`. The package checks the
 * timestamp against the real clock (5 minutes either way): the check runs as of the request's own timestamp, so that
 * deliveries made on TestClock are judged on their signatures alone.
 */
export const verifiesWith = (secret: string, request: ReceivedRequest): boolean => {
  vi.setSystemTime(Number(request.headers["webhook-timestamp"]) * 1000)
  try {
    new Webhook(secret).verify(request.body, standardHeadersOf(request))
    return true
  } catch {
    return false
  } finally {
    vi.useRealTimers()
  }
}

/** Whether a `v1a` signature of the request verifies with the `whpk_` public key alone (ed25519, node:crypto). */
export const verifiesWithPublicKey = (publicKey: string, request: ReceivedRequest, body: Buffer = request.body) => {
  const key = createPublicKey({
    key: {
      kty: "OKP",
      crv: "Ed25519",
      x: Buffer.from(publicKey.slice("whpk_".length), "base64").toString("base64url")
    },
    format: "jwk"
  })
  const headers = standardHeadersOf(request)
  const content = Buffer.concat([
    Buffer.from(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.`),
    body
  ])
  return headers["webhook-signature"]!.split(" ").some((signature) =>
    signature.startsWith("v1a,") && verify(null, content, key, Buffer.from(signature.slice(4), "base64"))
  )
}
