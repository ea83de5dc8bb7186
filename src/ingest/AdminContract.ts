import { Schema } from "effect"
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "effect/http-api"
import type { RelayAccess } from "../relay/Relay.js"
import { destinationsGroup } from "./AdminDestinationSchemas.js"
import { endpointsGroup } from "./AdminEndpointSchemas.js"
import { keysGroup } from "./AdminKeySchemas.js"
import * as M from "./AdminMessageSchemas.js"
import * as S from "./AdminSchemas.js"
import { type AdminCaller, requires } from "./AdminScopes.js"
import * as Sec from "./AdminSecretSchemas.js"
import * as Src from "./AdminSourceSchemas.js"

/**
 * The admin API as a contract (REFERENCE §5–§7c, §11): every route with its path, query, body, answers,
 * errors and the scope a key needs for it (`requires`, `AdminScopes`). `HttpApiBuilder` serves exactly these routes behind `AdminAuthentication`, and
 * `/admin/openapi.json` is generated from it; the tests check that the answers decode with these
 * schemas. The handlers keep their own body decoding (`AdminApi`, `AdminEndpointRoutes`,
 * `AudienceRoutes`): size limits, compressed syncs, and error bodies that name every failing field
 * the way every hookrelay endpoint does, which the contract describes as `errors`.
 */

/**
 * The bearer token: HOOKRELAY_ADMIN_TOKEN or an API key, refused a route outside its scopes or sources (REFERENCE §7c);
 * without HOOKRELAY_ADMIN_TOKEN, every admin route is 404. Handlers are given the caller.
 */
export class AdminAuthentication extends HttpApiMiddleware.Service<
  AdminAuthentication,
  { provides: AdminCaller; requires: RelayAccess }
>()(
  "AdminAuthentication",
  {
    error: [S.Unauthorized, S.Forbidden, S.AdminDisabled],
    security: { bearer: HttpApiSecurity.bearer }
  }
) {}

const SourcePath = { sourceId: Schema.String }
const Limit = Schema.optional(S.QueryValue.annotate({ description: "a whole number; default 100, at most 1000" }))

/** The errors of a route, and the one every route can meet: a store that is down. */
const errors = <const E extends ReadonlyArray<Schema.Top>>(...list: E) => [...list, S.StoreUnavailable] as const

const sources = HttpApiGroup.make("sources")
  .add(
    HttpApiEndpoint.get("listSources", "/admin/sources", { success: Src.SourceList, error: errors() })
      .annotateMerge(requires("sources:read"))
  )
  .add(
    HttpApiEndpoint.put("putSource", "/admin/sources/:sourceId", {
      params: SourcePath,
      payload: Src.SourceSettings,
      success: Src.SourceView,
      error: errors(S.InvalidRequest, S.Conflict, S.PayloadTooLarge)
    }).annotate(OpenApi.Description, "Creates or replaces a source; secrets are masked in the answer.")
      .annotateMerge(requires("sources:write"))
  )
  .add(
    HttpApiEndpoint.get("getSource", "/admin/sources/:sourceId", {
      params: SourcePath,
      success: Src.SourceView,
      error: errors(S.NotFound)
    }).annotateMerge(requires("sources:read"))
  )
  .add(
    HttpApiEndpoint.delete("deleteSource", "/admin/sources/:sourceId", {
      params: SourcePath,
      success: HttpApiSchema.NoContent,
      error: errors(S.NotFound)
    }).annotateMerge(requires("sources:write"))
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/admin/sources/:sourceId/secrets/rotate", {
      params: SourcePath,
      payload: Sec.RotateSecretInput,
      success: Sec.RotatedSecretView,
      error: errors(S.InvalidRequest, S.NotFound)
    }).annotate(OpenApi.Description, "A new Standard Webhooks secret (shown once); the previous ones expire later.")
      .annotateMerge(requires("sources:write"))
  )
  .add(
    HttpApiEndpoint.get("sourceUsage", "/admin/sources/:sourceId/usage", {
      params: SourcePath,
      query: {
        days: Schema.optional(S.QueryValue.annotate({ description: "a whole number of days; default 30" })),
        destinationId: Schema.optional(
          S.QueryValue.annotate({ description: "delivered, dead and latency of this destination's jobs only" })
        )
      },
      success: S.UsageView,
      error: errors(S.InvalidRequest, S.NotFound)
    }).middleware(S.QueryDecoding).annotateMerge(requires("sources:read"))
  )
  .add(
    HttpApiEndpoint.get("sourceMessages", "/admin/sources/:sourceId/messages", {
      params: SourcePath,
      query: {
        limit: Schema.optional(S.QueryValue.annotate({ description: "a whole number; default 50, at most 500" }))
      },
      success: S.MessageList,
      error: errors(S.InvalidRequest, S.NotFound)
    }).annotate(
      OpenApi.Description,
      "The source's newest messages that made jobs, each with its jobs and every attempt (the log's listing is " +
        "`GET /admin/messages?sourceId=`)."
    ).middleware(S.QueryDecoding).annotateMerge(requires("messages:read"))
  )

const messages = HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.get("listMessages", "/admin/messages", {
      query: M.MessageLogParams,
      success: M.MessageLogPageView,
      error: errors(S.InvalidRequest)
    }).annotate(
      OpenApi.Description,
      "The message log (REFERENCE §12): every accepted message, filtered ones included, newest first, with its " +
        "state at each destination. Filters combine; a repeated filter matches any of its values. A page may hold " +
        "fewer than `limit` messages with `next` set: follow `next` (as `after`) until it is null. A key limited to " +
        "sources sees its own."
    ).middleware(S.QueryDecoding).annotateMerge(requires("messages:read"))
  )
  .add(
    HttpApiEndpoint.get("getMessage", "/admin/messages/:messageId", {
      params: { messageId: Schema.String },
      success: S.MessageJobs,
      error: errors(S.NotFound)
    }).annotate(OpenApi.Description, "The message's jobs with their status and every attempt.")
      .annotateMerge(requires("messages:read"))
  )

const deadLetters = HttpApiGroup.make("deadLetters")
  .add(
    HttpApiEndpoint.get("listDeadLetters", "/admin/dead-letters", {
      query: { sourceId: Schema.optional(S.QueryValue), limit: Limit },
      success: S.DeadLetters,
      error: errors(S.InvalidRequest)
    }).middleware(S.QueryDecoding).annotateMerge(requires("messages:read"))
  )
  .add(
    HttpApiEndpoint.post("replayDeadLetter", "/admin/dead-letters/:jobId/replay", {
      params: { jobId: Schema.String },
      success: S.Replayed,
      error: errors(S.NotFound, S.Conflict)
    }).annotate(OpenApi.Description, "Replays a dead letter to its destination; 409 when the destination is gone.")
      .annotateMerge(requires("replay"))
  )

const operations = HttpApiGroup.make("operations")
  .add(
    HttpApiEndpoint.get("backlog", "/admin/backlog", { success: S.Backlog, error: errors() })
      .annotateMerge(requires("sources:read", { allSources: true }))
  )
  .add(
    HttpApiEndpoint.get("openApi", "/admin/openapi.json", {
      success: Schema.ObjectKeyword.annotate({ description: "this document" }),
      error: errors()
    }).annotate(OpenApi.Description, "The admin API's OpenAPI 3.1 document.")
      .annotateMerge(requires("sources:read"))
  )

const deletions = HttpApiGroup.make("deletions")
  .add(
    HttpApiEndpoint.post("createDeletion", "/admin/deletions", {
      payload: S.DeletionInput,
      success: S.DeletionCreated,
      error: errors(S.InvalidRequest, S.PayloadTooLarge, S.UnsupportedEncoding)
    }).annotate(OpenApi.Description, "Deletes a user's undelivered jobs and notifies the sources (REFERENCE §5).")
      .annotateMerge(requires("privacy", { allSources: true }))
  )
  .add(
    HttpApiEndpoint.get("getDeletion", "/admin/deletions/:deletionId", {
      params: { deletionId: Schema.String },
      success: S.DeletionView,
      error: errors(S.NotFound)
    }).annotateMerge(requires("privacy", { allSources: true }))
  )

const audiences = HttpApiGroup.make("audiences")
  .add(
    HttpApiEndpoint.put("syncAudience", "/admin/sources/:sourceId/audiences/:audienceName", {
      params: { sourceId: Schema.String, audienceName: Schema.String },
      payload: S.AudienceMembers,
      success: S.AudienceSynced,
      error: errors(S.InvalidRequest, S.NotFound, S.Conflict, S.PayloadTooLarge, S.UnsupportedEncoding)
    }).annotate(OpenApi.Description, "Replaces an audience's members (REFERENCE §6).")
      .annotateMerge(requires("privacy"))
  )
  .add(
    HttpApiEndpoint.put("syncTrait", "/admin/sources/:sourceId/traits/:traitName", {
      params: { sourceId: Schema.String, traitName: Schema.String },
      payload: S.TraitValues,
      success: S.TraitSynced,
      error: errors(S.InvalidRequest, S.NotFound, S.Conflict, S.PayloadTooLarge, S.UnsupportedEncoding)
    }).annotate(OpenApi.Description, "Replaces a computed trait's values (REFERENCE §6).")
      .annotateMerge(requires("privacy"))
  )

export const AdminContract = HttpApi.make("hookrelay-admin")
  .add(sources, destinationsGroup, messages, deadLetters, operations, deletions, audiences, endpointsGroup, keysGroup)
  .middleware(AdminAuthentication)
  .annotate(OpenApi.Title, "hookrelay admin API")
  .annotate(
    OpenApi.Description,
    "Sources and their destinations, messages, dead letters, deletions and audiences of a hookrelay server. " +
      "Every route needs `Authorization: Bearer <token>`: HOOKRELAY_ADMIN_TOKEN (scope `admin`) or an API key " +
      "(`hrk_…`) with the scope the route names (`x-hookrelay-scope`, the role of its security requirement)."
  )

let document: OpenApi.OpenAPISpec | undefined

/** The OpenAPI 3.1 document of the admin API (generated once), for the package's `version`. */
export const openApiDocument = (version: string): OpenApi.OpenAPISpec => {
  if (document === undefined) {
    const generated = OpenApi.fromApi(AdminContract)
    document = { ...generated, info: { ...generated.info, version } }
  }
  return document
}
