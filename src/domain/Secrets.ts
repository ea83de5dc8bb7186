import { createHash, timingSafeEqual } from "node:crypto"

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/**
 * Compares two secrets in constant time. Both sides are hashed first so that neither the length
 * nor a common prefix leaks through timing (REFERENCE §8).
 */
export const secretsEqual = (given: string, expected: string): boolean =>
  timingSafeEqual(digest(given), digest(expected))

/** What an answer shows of a secret: never the whole of it (REFERENCE §7). */
export const maskSecret = (secret: string): string =>
  secret.length <= 8 ? "…" : `${secret.slice(0, 4)}…${secret.slice(-2)}`
