import { Effect, Option, Result } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { FieldIssue } from "../domain/Issues.js"
import { formatTimestamp } from "../domain/Timestamp.js"
import { RelayAccess, RelaySources, type StoreError } from "../relay/Relay.js"
import type { StoredApiKey, StoredAuditEntry } from "../relay/services/RelayAccess.js"
import { readAdminJson } from "./AdminBody.js"
import { AdminContract } from "./AdminContract.js"
import type * as K from "./AdminKeySchemas.js"
import { AdminCaller, type Scope, scopes } from "./AdminScopes.js"
import { errorResponse } from "./ErrorBody.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

const maxNameLength = 200

const iso = (ms: number | null) => ms === null ? null : formatTimestamp(ms)

const keyView = (key: StoredApiKey): typeof K.KeyView.Type => ({
  id: key.id,
  name: key.name,
  scopes: key.scopes,
  sourceIds: key.sourceIds,
  createdAt: iso(key.createdAt),
  lastUsedAt: iso(key.lastUsedAt),
  revokedAt: iso(key.revokedAt)
})

const invalid = (issues: ReadonlyArray<FieldIssue>) =>
  errorResponse(400, "invalid_request", issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues)

interface KeyRequest {
  readonly name: string
  readonly scopes: ReadonlyArray<Scope>
  readonly sourceIds: ReadonlyArray<string> | null
}

/** A key's name, scopes and sources, every failing field named; unknown sources are refused (likely a typo). */
export const checkKeyInput = (
  input: unknown,
  knownSources: ReadonlySet<string>
): Result.Result<KeyRequest, FieldIssue[]> => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return Result.fail([{ path: "", message: "must be a JSON object" }])
  }
  const body = input as Record<string, unknown>
  const issues: Array<FieldIssue> = []
  const name = typeof body.name === "string" ? body.name.trim() : undefined
  if (name === undefined) issues.push({ path: "name", message: "is required: a string" })
  else if (name === "") issues.push({ path: "name", message: "must not be empty" })
  else if (name.length > maxNameLength) {
    issues.push({ path: "name", message: `must be at most ${maxNameLength} characters` })
  }
  const given = body.scopes
  if (!Array.isArray(given) || given.length === 0) {
    issues.push({ path: "scopes", message: `must be a non-empty list of ${scopes.join(", ")}` })
  } else {
    given.forEach((scope, i) => {
      if (!(scopes as ReadonlyArray<unknown>).includes(scope)) {
        issues.push({ path: `scopes[${i}]`, message: `unknown scope; one of ${scopes.join(", ")}` })
      }
    })
  }
  let sourceIds: ReadonlyArray<string> | null = null
  if (body.sourceIds !== undefined && body.sourceIds !== null) {
    if (!Array.isArray(body.sourceIds) || body.sourceIds.length === 0) {
      issues.push({
        path: "sourceIds",
        message: "must be a non-empty list of source ids (leave it out for every source)"
      })
    } else {
      body.sourceIds.forEach((id, i) => {
        if (typeof id !== "string" || !knownSources.has(id)) {
          issues.push({ path: `sourceIds[${i}]`, message: "no such source" })
        }
      })
      sourceIds = [...new Set(body.sourceIds as ReadonlyArray<string>)]
      if (Array.isArray(given) && given.includes("admin")) {
        issues.push({ path: "sourceIds", message: "a key with scope admin has every source: leave it out" })
      }
    }
  }
  if (issues.length > 0) return Result.fail(issues)
  return Result.succeed({ name: name!, scopes: [...new Set(given as ReadonlyArray<Scope>)], sourceIds })
}

const createKey = Effect.gen(function*() {
  const access = yield* RelayAccess
  const relaySources = yield* RelaySources
  const body = yield* readAdminJson
  if (Result.isFailure(body)) return body.failure
  const known = new Set((yield* relaySources.listSources).map((source) => source.id))
  const input = checkKeyInput(body.success, known)
  if (Result.isFailure(input)) return invalid(input.failure)
  const created = yield* access.createKey(input.success)
  return HttpServerResponse.jsonUnsafe(
    { ...keyView(created.apiKey), key: created.key } satisfies typeof K.KeyCreated.Type,
    { status: 201 }
  )
})

/** The opaque cursor of an entry (the next page starts below it), and back. */
const cursorOf = (entry: StoredAuditEntry) => Buffer.from(`a${entry.id}`, "utf8").toString("base64url")
const entryIdOf = (cursor: string): number | undefined => {
  const match = /^a(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match === null ? undefined : Number(match[1])
}

const auditLog = Effect.gen(function*() {
  const access = yield* RelayAccess
  const params = yield* HttpServerRequest.ParsedSearchParams
  const limitText = params.limit === undefined || params.limit === "" ? "100" : params.limit
  const limit = typeof limitText === "string" && /^\d{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN
  if (!(limit >= 1 && limit <= 1000)) {
    return invalid([{ path: "limit", message: "must be a whole number from 1 to 1000" }])
  }
  const after = params.after
  const before = after === undefined || after === ""
    ? undefined
    : typeof after === "string"
    ? entryIdOf(after)
    : undefined
  if (after !== undefined && after !== "" && before === undefined) {
    return invalid([{ path: "after", message: "is not a cursor this API gave" }])
  }
  const entries = yield* access.auditEntries({ limit: limit + 1, before })
  const page = entries.slice(0, limit)
  return HttpServerResponse.jsonUnsafe(
    {
      entries: page.map(({ at, id: _id, ...entry }) => ({ ...entry, at: formatTimestamp(at) })),
      next: entries.length > limit ? cursorOf(page[page.length - 1]!) : null
    } satisfies typeof K.AuditPage.Type
  )
})

const handled = <R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, StoreError, R>) => () =>
  Effect.catch(handler, (error) => storeUnavailableResponse("admin key request failed in the store", error))

/** API keys and the audit log (REFERENCE §7c, `AdminKeySchemas`). */
export const keyHandlers = HttpApiBuilder.group(AdminContract, "keys", (handlers) =>
  handlers
    .handleRaw("createKey", handled(createKey))
    .handleRaw(
      "listKeys",
      handled(Effect.gen(function*() {
        const access = yield* RelayAccess
        return HttpServerResponse.jsonUnsafe(
          { keys: (yield* access.listKeys).map(keyView) } satisfies typeof K.KeyList.Type
        )
      }))
    )
    .handleRaw(
      "keySelf",
      handled(Effect.map(AdminCaller, (caller) =>
        HttpServerResponse.jsonUnsafe(
          {
            id: caller.keyId,
            name: caller.name,
            scopes: caller.scopes,
            sourceIds: caller.sourceIds
          } satisfies typeof K.KeySelf.Type
        )))
    )
    .handleRaw(
      "revokeKey",
      handled(Effect.gen(function*() {
        const access = yield* RelayAccess
        const keyId = (yield* HttpRouter.params).keyId ?? ""
        const revoked = yield* access.revokeKey(keyId)
        return Option.isSome(revoked)
          ? HttpServerResponse.empty({ status: 204 })
          : errorResponse(404, "not_found", `no key ${keyId}`)
      }))
    )
    .handleRaw("auditLog", handled(auditLog)))
