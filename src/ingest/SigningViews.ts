import { destinationById } from "../domain/Destinations.js"
import { webhooksDestinationId, type WebhookSettings } from "../domain/Settings.js"
import { signingPublicKey } from "../domain/Signing.js"
import type { SigningSecret } from "../domain/Signing.js"
import type { RotatedSecret } from "../relay/Relay.js"
import type * as Sec from "./AdminSecretSchemas.js"

/** What identifies a secret without revealing it: `whsec_` and four characters of its key. */
const prefixLength = "whsec_".length + 4

export const signingSecretView = (secret: SigningSecret): typeof Sec.SigningSecretView.Type => ({
  id: secret.id ?? "",
  prefix: secret.secret.slice(0, prefixLength),
  createdAt: secret.createdAt ?? null,
  expiresAt: secret.expiresAt ?? null
})

/**
 * A source's signing as the admin API shows it: secrets by id and prefix, the private key never, its public key.
 * Fields never set stay absent, so a source signing only `X-Signature` looks as it always did.
 */
export const signingView = (settings: WebhookSettings) => {
  const publicKey = signingPublicKey(settings)
  return {
    ...(settings.signing !== undefined && { signing: settings.signing }),
    ...(settings.signingSecrets !== undefined && settings.signingSecrets.length > 0 &&
      { signingSecrets: settings.signingSecrets.map(signingSecretView) }),
    ...(settings.asymmetric !== undefined && { asymmetric: settings.asymmetric }),
    ...(publicKey !== undefined && { publicKey })
  }
}

/** A rotation's answer: the new secret in full, and the rotated destination's secrets (default `webhooks`) masked. */
export const rotatedView = (
  rotated: RotatedSecret,
  destinationId: string = webhooksDestinationId
): typeof Sec.RotatedSecretView.Type => ({
  secret: rotated.secret,
  id: rotated.id,
  createdAt: rotated.createdAt,
  signingSecrets: (destinationById(rotated.source.destinations, destinationId)?.signingSecrets ?? []).map(
    signingSecretView
  )
})
