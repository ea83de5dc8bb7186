import { Schema } from "effect"
import { Timestamp } from "./AdminSchemas.js"

/** The admin API's Standard Webhooks bodies: secrets are shown in full only in the answer that created them. */

export const SigningSecretView = Schema.Struct({
  id: Schema.String,
  prefix: Schema.String.annotate({ description: "the secret's first characters, to tell it apart" }),
  createdAt: Timestamp,
  expiresAt: Timestamp
}).annotate({ identifier: "SigningSecret" })

/** What a source's `webhooks` show of its signing (added to the source view); each absent when never set. */
export const signingViewFields = {
  signing: Schema.optionalKey(Schema.Literals(["segment", "standard", "both"])),
  signingSecrets: Schema.optionalKey(Schema.Array(SigningSecretView)),
  asymmetric: Schema.optionalKey(Schema.Boolean),
  publicKey: Schema.optionalKey(
    Schema.String.annotate({ description: "whpk_ ed25519 public key that verifies v1a signatures" })
  )
}

export const RotateSecretInput = Schema.Struct({
  keepOldFor: Schema.optional(
    Schema.String.annotate({
      description: "how long the previous secrets keep signing, e.g. \"24 hours\" (the default) or \"0 seconds\""
    })
  )
}).annotate({ identifier: "RotateSecretInput" })

export const RotatedSecretView = Schema.Struct({
  secret: Schema.String.annotate({ description: "the new whsec_ secret, in full: shown only in this answer" }),
  id: Schema.String,
  createdAt: Timestamp,
  signingSecrets: Schema.Array(SigningSecretView)
}).annotate({ identifier: "RotatedSecret" })
