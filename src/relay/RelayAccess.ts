import { Clock, Effect, Option } from "effect"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import type { ApiKeysShape } from "../store/ApiKeys.js"
import type { AuditLogShape } from "../store/AuditLog.js"
import type { MessageLogShape } from "../store/MessageLog.js"
import type { RelayAccessShape } from "./services/RelayAccess.js"

/** A key's last use is written at most this often per key and process: a busy script costs no write per request. */
export const lastUsedEvery = 60_000

export const keyPrefix = "hrk_"

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** The admin API's keys and audit log over the store: keys are made here, and only their hashes leave. */
export const makeAccess = (keys: ApiKeysShape, audit: AuditLogShape, messages: MessageLogShape): RelayAccessShape => {
  const touched = new Map<string, number>()

  const createKey: RelayAccessShape["createKey"] = (input) =>
    Effect.gen(function*() {
      const key = `${keyPrefix}${randomBytes(32).toString("base64url")}`
      const id = `key_${randomBytes(9).toString("base64url")}`
      const now = yield* Clock.currentTimeMillis
      const apiKey = yield* keys.createKey({ id, keyHash: sha256(key), ...input }, now)
      return { key, apiKey }
    })

  const authenticateKey: RelayAccessShape["authenticateKey"] = (text) =>
    Effect.gen(function*() {
      const hash = sha256(text)
      const found = yield* keys.findKeyByHash(hash)
      if (Option.isNone(found)) return found
      const key = found.value
      // The row was found by its hash; the comparison itself is constant-time all the same.
      const equal = timingSafeEqual(Buffer.from(key.keyHash, "hex"), Buffer.from(hash, "hex"))
      if (!equal || key.revokedAt !== null) return Option.none()
      const now = yield* Clock.currentTimeMillis
      const last = touched.get(key.id)
      if (last === undefined || now - last >= lastUsedEvery) {
        touched.set(key.id, now)
        // A failed note of the last use does not refuse the request it was for.
        yield* keys.touchKey(key.id, now).pipe(Effect.catch((error) => Effect.logWarning("key last use", error)))
        return Option.some({ ...key, lastUsedAt: now })
      }
      return found
    })

  return {
    createKey,
    listKeys: Effect.suspend(() => keys.listKeys()),
    authenticateKey,
    revokeKey: (id) => Effect.flatMap(Clock.currentTimeMillis, (now) => keys.revokeKey(id, now)),
    jobSourceId: (jobId) => Effect.map(messages.getJob(jobId), Option.map((job) => job.sourceId)),
    recordAudit: (entry) => Effect.flatMap(Clock.currentTimeMillis, (at) => audit.appendAudit({ ...entry, at })),
    auditEntries: audit.listAudit
  }
}
