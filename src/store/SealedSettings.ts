import { Effect } from "effect"
import type { SecretBoxShape, SecretKeysError } from "./SecretBox.js"

/**
 * Where a stored destination keeps secrets (docs/SECURITY.md): its shared secret, each signing secret, its ed25519
 * private key, and the values of its endpoints' static headers (they often carry a receiver's token). These are the
 * strings sealed in the JSON of the `webhooks` and `destinations` columns; everything else stays readable.
 */

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const mapStringField = (object: Json, field: string, f: (value: string) => string): Json => {
  const value = object[field]
  return typeof value === "string" ? { ...object, [field]: f(value) } : object
}

/** One stored destination (its encoded JSON) with every secret string mapped by `f`. */
export const mapDestinationSecrets = (destination: unknown, f: (value: string) => string): unknown => {
  if (!isObject(destination)) return destination
  let out = mapStringField(mapStringField(destination, "sharedSecret", f), "signingKey", f)
  if (Array.isArray(out.signingSecrets)) {
    out = {
      ...out,
      signingSecrets: (out.signingSecrets as ReadonlyArray<unknown>).map((secret) =>
        isObject(secret) ? mapStringField(secret, "secret", f) : secret
      )
    }
  }
  if (Array.isArray(out.endpoints)) {
    out = {
      ...out,
      endpoints: (out.endpoints as ReadonlyArray<unknown>).map((endpoint) =>
        isObject(endpoint) && isObject(endpoint.headers)
          ? {
            ...endpoint,
            headers: Object.fromEntries(
              Object.entries(endpoint.headers).map((
                [name, value]
              ) => [name, typeof value === "string" ? f(value) : value])
            )
          }
          : endpoint
      )
    }
  }
  return out
}

/** A column's JSON (one destination, or a list of them) with every secret mapped by `f`. */
export const mapColumnSecrets = (column: unknown, f: (value: string) => string): unknown =>
  Array.isArray(column)
    ? column.map((destination) => mapDestinationSecrets(destination, f))
    : mapDestinationSecrets(column, f)

/** Every secret string of a column's JSON, in order. */
export const columnSecrets = (column: unknown): ReadonlyArray<string> => {
  const found: Array<string> = []
  mapColumnSecrets(column, (value) => {
    found.push(value)
    return value
  })
  return found
}

/** A column's JSON with its secrets opened: each distinct sealed value once, through the box's memory. */
export const openColumn = (column: unknown, box: SecretBoxShape): Effect.Effect<unknown, SecretKeysError> => {
  const secrets = columnSecrets(column)
  if (secrets.length === 0) return Effect.succeed(column)
  return Effect.map(
    Effect.forEach(secrets, box.open),
    (opened) => {
      const plain = new Map(secrets.map((stored, index) => [stored, opened[index]!]))
      return mapColumnSecrets(column, (stored) => plain.get(stored) ?? stored)
    }
  )
}

/** A column's JSON with its secrets sealed with the box's first key (as they are without a key). */
export const sealColumn = (column: unknown, box: SecretBoxShape): unknown =>
  box.keyIds.length === 0 ? column : mapColumnSecrets(column, box.seal)
