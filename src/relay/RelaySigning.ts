import { Clock, Duration, Effect, Option, Result } from "effect"
import { randomBytes } from "node:crypto"
import { InvalidAdminRequest } from "../audiences/AudienceErrors.js"
import { generateSecret, generateSigningKeyPair } from "../delivery/StandardWebhooks.js"
import { UnknownDestination } from "../domain/DestinationErrors.js"
import { destinationById, settingsOf } from "../domain/Destinations.js"
import { parseDuration } from "../domain/DurationConfig.js"
import { UnknownSource } from "../domain/IngestErrors.js"
import type { Destination, SourceConfig, WebhookSettings } from "../domain/Settings.js"
import { webhooksDestinationId } from "../domain/Settings.js"
import { encodePrivateKey, expiryOf, maxSigningSecrets, signsStandard } from "../domain/Signing.js"
import type { SigningSecret } from "../domain/Signing.js"
import type { SourcesShape } from "../store/Sources.js"
import type { StoreError, WriteKeyConflict } from "../store/StoreError.js"
import type { RotatedSecret, SavedSource } from "./Relay.js"

/** How long the previous secrets keep signing after a rotation, unless told otherwise. */
export const defaultKeepOldFor: Duration.Input = "24 hours"

/** The longest `keepOldFor` a rotation takes: a year. */
const maxKeepOldFor = Duration.days(366)

const iso = (millis: number): string => new Date(millis).toISOString()

const newSecret = (now: number, secret: string = generateSecret()): SigningSecret => ({
  secret,
  id: "sec_" + randomBytes(8).toString("hex"),
  createdAt: iso(now)
})

/** A given secret keeps the id and creation time it was stored with; a new one gets its own. */
const identify = (
  given: ReadonlyArray<SigningSecret>,
  stored: ReadonlyArray<SigningSecret>,
  now: number
): Array<SigningSecret> =>
  given.map((secret) => {
    const known = stored.find((old) => old.secret === secret.secret)
    const base = known ?? newSecret(now, secret.secret)
    return {
      ...secret,
      id: secret.id ?? base.id!,
      createdAt: secret.createdAt ?? base.createdAt!
    }
  })

/**
 * The signing settings as saved: secrets and key the operator left out are kept from the stored settings (so a
 * PUT of other fields, or provisioning at each start, changes no secret); a scheme that needs a secret and has none
 * gets one generated, returned once as `generatedSecret`; `asymmetric` without a key gets an ed25519 key.
 */
export const completeSigning = (
  given: WebhookSettings,
  stored: WebhookSettings | undefined,
  now: number
): { readonly webhooks: WebhookSettings; readonly generatedSecret?: string } => {
  let secrets = given.signingSecrets === undefined
    ? stored?.signingSecrets ?? []
    : identify(given.signingSecrets, stored?.signingSecrets ?? [], now)
  let generatedSecret: string | undefined
  // With an ed25519 key, receivers verify with the public key and need no shared secret.
  const needsSecret = signsStandard(given) && given.asymmetric !== true
  if (needsSecret && !secrets.some((secret) => expiryOf(secret) > now)) {
    const created = newSecret(now)
    generatedSecret = created.secret
    // None of the others signs any more: the new one replaces them.
    secrets = [created]
  }
  const signingKey = given.signingKey ?? stored?.signingKey ??
    (given.asymmetric === true ? encodePrivateKey(generateSigningKeyPair().privateKey) : undefined)
  const webhooks: WebhookSettings = {
    ...given,
    ...(secrets.length > 0 && { signingSecrets: secrets }),
    ...(signingKey !== undefined && { signingKey })
  }
  return generatedSecret === undefined ? { webhooks } : { webhooks, generatedSecret }
}

/** `keepOldFor` as a duration from zero (the old secrets stop at once) to a year, or the issue naming the field. */
export const parseKeepOldFor = (input: unknown): Duration.Duration | InvalidAdminRequest => {
  const invalid = (message: string) => new InvalidAdminRequest({ errors: [{ path: "keepOldFor", message }] })
  if (input === undefined) return Duration.fromInputUnsafe(defaultKeepOldFor)
  const decoded = Duration.isDuration(input)
    ? Option.some(input)
    : typeof input === "string"
    ? parseDuration(input)
    : typeof input === "number" && Number.isFinite(input) && input >= 0
    ? Option.some(Duration.millis(input))
    : Option.none()
  if (Option.isNone(decoded) || !Duration.isFinite(decoded.value)) {
    return invalid("must be a duration such as \"24 hours\", \"30 minutes\" or \"0 seconds\"")
  }
  if (Duration.isGreaterThan(decoded.value, maxKeepOldFor)) return invalid("must be at most 366 days")
  return decoded.value
}

/**
 * A rotation: expired secrets are dropped, a new primary comes first, and every other secret stops signing at
 * `now + keepOldFor` at the latest, so receivers have that long to take the new one.
 */
export const rotateSecrets = (
  webhooks: WebhookSettings,
  keepOldFor: Duration.Duration,
  now: number
): { readonly webhooks: WebhookSettings; readonly secret: SigningSecret } | InvalidAdminRequest => {
  const until = now + Duration.toMillis(keepOldFor)
  const kept = (webhooks.signingSecrets ?? []).filter((secret) => expiryOf(secret) > now)
  if (kept.length + 1 > maxSigningSecrets) {
    return new InvalidAdminRequest({
      errors: [{
        path: "signingSecrets",
        message:
          `holds ${kept.length} unexpired secrets: at most ${maxSigningSecrets} (with the new one) are allowed; ` +
          "wait for one to expire or remove one with a PUT"
      }]
    })
  }
  const secret = newSecret(now)
  const older = kept.map((old) => (expiryOf(old) <= until ? old : { ...old, expiresAt: iso(until) }))
  return { webhooks: { ...webhooks, signingSecrets: [secret, ...older] }, secret }
}

/**
 * Saves a source with the signing of each destination it gives completed (see `completeSigning`) against the stored
 * destination of the same id.
 */
export const saveSource = (
  sources: SourcesShape,
  source: SourceConfig,
  now: number
): Effect.Effect<SavedSource, StoreError | WriteKeyConflict> =>
  Effect.gen(function*() {
    if (source.webhooks === undefined && source.destinations === undefined) {
      return yield* sources.upsertSource(source, now)
    }
    const stored = Option.getOrUndefined(yield* sources.getSource(source.id))?.destinations ?? []
    const generated: Record<string, string> = {}
    const complete = (id: string, given: WebhookSettings): WebhookSettings => {
      const before = destinationById(stored, id)
      const completed = completeSigning(given, before === undefined ? undefined : settingsOf(before), now)
      if (completed.generatedSecret !== undefined) generated[id] = completed.generatedSecret
      return completed.webhooks
    }
    const completed: SourceConfig = {
      id: source.id,
      writeKey: source.writeKey,
      ...(source.webhooks !== undefined && { webhooks: complete(webhooksDestinationId, source.webhooks) }),
      ...(source.destinations !== undefined && {
        destinations: source.destinations.map((destination) => ({
          id: destination.id,
          ...complete(destination.id, settingsOf(destination))
        }))
      })
    }
    const saved = yield* sources.upsertSource(completed, now)
    const { [webhooksDestinationId]: generatedSecret, ...others } = generated
    return {
      ...saved,
      ...(generatedSecret !== undefined && { generatedSecret }),
      ...(Object.keys(others).length > 0 && { generatedSecrets: others })
    }
  })

type Changed = Result.Result<ReadonlyArray<Destination>, UnknownDestination | InvalidAdminRequest>

/**
 * A rotation of one destination's secrets (see `rotateSecrets`), read and written in one transaction; the caller
 * refreshes the source cache.
 */
export const rotateDestinationSecret = (
  sources: SourcesShape,
  sourceId: string,
  destinationId: string,
  keepOldFor: unknown
) =>
  Effect.gen(function*() {
    const duration = parseKeepOldFor(keepOldFor)
    if (duration instanceof InvalidAdminRequest) return yield* duration
    const now = yield* Clock.currentTimeMillis
    let secret: SigningSecret | undefined
    const saved = yield* sources.changeDestinations(sourceId, now, (current): Changed => {
      const destination = destinationById(current, destinationId)
      if (destination === undefined) return Result.fail(new UnknownDestination({ sourceId, destinationId }))
      const rotated = rotateSecrets(settingsOf(destination), duration, now)
      if (rotated instanceof InvalidAdminRequest) return Result.fail(rotated)
      secret = rotated.secret
      return Result.succeed(current.map((old) => old.id === destinationId ? { id: old.id, ...rotated.webhooks } : old))
    })
    if (Option.isNone(saved) || secret === undefined) return yield* new UnknownSource({ sourceId })
    const result: RotatedSecret = {
      secret: secret.secret,
      id: secret.id!,
      createdAt: secret.createdAt!,
      source: saved.value
    }
    return result
  })

/** `RelaySources.rotateSecret`: the rotation of the destination `webhooks`. */
export const rotateSourceSecret = (sources: SourcesShape, sourceId: string, keepOldFor: unknown) =>
  rotateDestinationSecret(sources, sourceId, webhooksDestinationId, keepOldFor).pipe(
    Effect.catchTag("UnknownDestination", () =>
      Effect.fail(
        new InvalidAdminRequest({
          errors: [{ path: "webhooks", message: "the source has no webhook destination to sign for" }]
        })
      ))
  )
