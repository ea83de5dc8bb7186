import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import * as S from "./AdminSchemas.js"
import { requires, ScopeName } from "./AdminScopes.js"

/** API keys and the audit log (REFERENCE §7c): bodies and routes. */

const SourceIds = Schema.NullOr(Schema.Array(Schema.String)).annotate({ description: "null: every source" })

export const KeyInput = Schema.Struct({
  name: Schema.String,
  scopes: Schema.Array(ScopeName),
  sourceIds: Schema.optional(Schema.Array(Schema.String).annotate({ description: "left out: every source" }))
}).annotate({ identifier: "KeyInput" })

export const KeyView = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  scopes: Schema.Array(Schema.String),
  sourceIds: SourceIds,
  createdAt: S.Timestamp,
  lastUsedAt: S.Timestamp,
  revokedAt: S.Timestamp
}).annotate({ identifier: "ApiKey" })

export const KeyCreated = Schema.Struct({
  ...KeyView.fields,
  key: Schema.String.annotate({ description: "the key (hrk_…), shown only in this answer" })
}).annotate({ identifier: "ApiKeyCreated" }).pipe(HttpApiSchema.status(201))

export const KeyList = Schema.Struct({ keys: Schema.Array(KeyView) })

export const KeySelf = Schema.Struct({
  id: Schema.NullOr(Schema.String).annotate({ description: "null for HOOKRELAY_ADMIN_TOKEN" }),
  name: Schema.String,
  scopes: Schema.Array(Schema.String),
  sourceIds: SourceIds
}).annotate({ identifier: "ApiKeySelf" })

export const AuditEntry = Schema.Struct({
  at: Schema.String,
  keyId: Schema.NullOr(Schema.String).annotate({ description: "null for HOOKRELAY_ADMIN_TOKEN" }),
  keyName: Schema.String,
  method: Schema.String,
  route: Schema.String,
  path: Schema.String,
  sourceId: Schema.NullOr(Schema.String),
  destinationId: Schema.NullOr(Schema.String),
  address: Schema.NullOr(Schema.String),
  status: Schema.Number
}).annotate({ identifier: "AuditEntry" })

export const AuditPage = Schema.Struct({
  entries: Schema.Array(AuditEntry),
  next: Schema.NullOr(Schema.String).annotate({ description: "`after` for the next page; null: no more" })
})

export const keysGroup = HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("createKey", "/admin/keys", {
      payload: KeyInput,
      success: KeyCreated,
      error: [S.InvalidRequest, S.PayloadTooLarge, S.StoreUnavailable]
    }).annotate(OpenApi.Description, "A new API key; the key itself is in this answer only.")
      .annotateMerge(requires("admin"))
  )
  .add(
    HttpApiEndpoint.get("listKeys", "/admin/keys", { success: KeyList, error: [S.StoreUnavailable] })
      .annotate(OpenApi.Description, "Every key, revoked ones too; never the keys themselves.")
      .annotateMerge(requires("admin"))
  )
  .add(
    HttpApiEndpoint.get("keySelf", "/admin/keys/self", { success: KeySelf, error: [S.StoreUnavailable] })
      .annotate(OpenApi.Description, "The calling key's name, scopes and sources.")
      .annotateMerge(requires("any"))
  )
  .add(
    HttpApiEndpoint.delete("revokeKey", "/admin/keys/:keyId", {
      params: { keyId: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [S.NotFound, S.StoreUnavailable]
    }).annotate(OpenApi.Description, "Revokes a key: it is refused (401) from then on.")
      .annotateMerge(requires("admin"))
  )
  .add(
    HttpApiEndpoint.get("auditLog", "/admin/audit", {
      query: {
        limit: Schema.optional(S.QueryValue.annotate({ description: "a whole number; default 100, at most 1000" })),
        after: Schema.optional(S.QueryValue.annotate({ description: "the `next` of the previous page" }))
      },
      success: AuditPage,
      error: [S.InvalidRequest, S.StoreUnavailable]
    }).middleware(S.QueryDecoding)
      .annotate(OpenApi.Description, "Admin writes, newest first: who, which route, on what, and the status.")
      .annotateMerge(requires("admin"))
  )
