import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Schema, SchemaAST } from "effect"
import { endpointsGroup } from "./AdminEndpointSchemas.js"
import * as S from "./AdminSchemas.js"
import * as Sec from "./AdminSecretSchemas.js"
import * as Src from "./AdminSourceSchemas.js"

/**
 * The admin API as a contract (SPEC §5–§7, §11): every route with its path, query, body, answers
 * and errors. `/admin/openapi.json` is generated from it, and the tests check that the router
 * serves exactly these routes and that their answers decode with these schemas. The routes keep
 * their own decoding (`AdminApi`, `AudienceRoutes`): their error bodies name the field the way
 * every hookrelay endpoint does, which the contract describes as `errors`.
 */

/** The bearer token of HOOKRELAY_ADMIN_TOKEN; without one configured, every admin route is 404. */
export class AdminAuthentication extends HttpApiMiddleware.Tag<AdminAuthentication>()("AdminAuthentication", {
  failure: Schema.Union(S.Unauthorized, S.AdminDisabled),
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const SourcePath = Schema.Struct({ sourceId: Schema.String })
const Limit = Schema.optional(
  Schema.String.annotations({ description: "a whole number; default 100, at most 1000" })
)

const sources = HttpApiGroup.make("sources")
  .add(HttpApiEndpoint.get("listSources", "/admin/sources").addSuccess(Src.SourceList))
  .add(
    HttpApiEndpoint.put("putSource", "/admin/sources/:sourceId")
      .setPath(SourcePath)
      .setPayload(Src.SourceSettings)
      .addSuccess(Src.SourceView)
      .addError(S.InvalidRequest)
      .addError(S.Conflict)
      .addError(S.PayloadTooLarge)
      .annotate(OpenApi.Description, "Creates or replaces a source; secrets are masked in the answer.")
  )
  .add(
    HttpApiEndpoint.get("getSource", "/admin/sources/:sourceId").setPath(SourcePath).addSuccess(Src.SourceView)
      .addError(S.NotFound)
  )
  .add(
    HttpApiEndpoint.del("deleteSource", "/admin/sources/:sourceId").setPath(SourcePath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(S.NotFound)
  )
  .add(
    HttpApiEndpoint.post("rotateSecret", "/admin/sources/:sourceId/secrets/rotate")
      .setPath(SourcePath)
      .setPayload(Sec.RotateSecretInput)
      .addSuccess(Sec.RotatedSecretView)
      .addError(S.InvalidRequest)
      .addError(S.NotFound)
      .annotate(OpenApi.Description, "A new Standard Webhooks secret (shown once); the previous ones expire later.")
  )
  .add(
    HttpApiEndpoint.get("sourceUsage", "/admin/sources/:sourceId/usage")
      .setPath(SourcePath)
      .setUrlParams(Schema.Struct({
        days: Schema.optional(Schema.String.annotations({ description: "a whole number of days; default 30" }))
      }))
      .addSuccess(S.UsageView)
      .addError(S.InvalidRequest)
      .addError(S.NotFound)
  )
  .add(
    HttpApiEndpoint.get("sourceMessages", "/admin/sources/:sourceId/messages")
      .setPath(SourcePath)
      .setUrlParams(Schema.Struct({ limit: Limit }))
      .addSuccess(S.MessageList)
      .addError(S.InvalidRequest)
      .addError(S.NotFound)
  )

const messages = HttpApiGroup.make("messages")
  .add(
    HttpApiEndpoint.get("searchMessages", "/admin/messages")
      .setUrlParams(Schema.Struct({
        userId: Schema.optional(Schema.String),
        sourceId: Schema.optional(Schema.String),
        limit: Limit
      }))
      .addSuccess(S.MessageList)
      .addError(S.InvalidRequest)
  )
  .add(
    HttpApiEndpoint.get("getMessage", "/admin/messages/:messageId")
      .setPath(Schema.Struct({ messageId: Schema.String }))
      .addSuccess(S.MessageJobs)
      .addError(S.NotFound)
      .annotate(OpenApi.Description, "The message's jobs with their status and attempts.")
  )

const deadLetters = HttpApiGroup.make("deadLetters")
  .add(
    HttpApiEndpoint.get("listDeadLetters", "/admin/dead-letters")
      .setUrlParams(Schema.Struct({ sourceId: Schema.optional(Schema.String), limit: Limit }))
      .addSuccess(S.DeadLetters)
      .addError(S.InvalidRequest)
  )
  .add(
    HttpApiEndpoint.post("replayDeadLetter", "/admin/dead-letters/:jobId/replay")
      .setPath(Schema.Struct({ jobId: Schema.String }))
      .addSuccess(S.Replayed)
      .addError(S.NotFound)
  )

const operations = HttpApiGroup.make("operations")
  .add(HttpApiEndpoint.get("backlog", "/admin/backlog").addSuccess(S.Backlog))
  .add(
    HttpApiEndpoint.get("openApi", "/admin/openapi.json")
      .addSuccess(Schema.Object.annotations({ description: "this document" }))
      .annotate(OpenApi.Description, "The admin API's OpenAPI 3.1 document.")
  )

const deletions = HttpApiGroup.make("deletions")
  .add(
    HttpApiEndpoint.post("createDeletion", "/admin/deletions")
      .setPayload(S.DeletionInput)
      .addSuccess(S.DeletionCreated)
      .addError(S.InvalidRequest)
      .addError(S.PayloadTooLarge)
      .addError(S.UnsupportedEncoding)
      .annotate(OpenApi.Description, "Deletes a user's undelivered jobs and notifies the sources (SPEC §5).")
  )
  .add(
    HttpApiEndpoint.get("getDeletion", "/admin/deletions/:deletionId")
      .setPath(Schema.Struct({ deletionId: Schema.String }))
      .addSuccess(S.DeletionView)
      .addError(S.NotFound)
  )

const audiences = HttpApiGroup.make("audiences")
  .add(
    HttpApiEndpoint.put("syncAudience", "/admin/sources/:sourceId/audiences/:audienceName")
      .setPath(Schema.Struct({ sourceId: Schema.String, audienceName: Schema.String }))
      .setPayload(S.AudienceMembers)
      .addSuccess(S.AudienceSynced)
      .addError(S.InvalidRequest)
      .addError(S.NotFound)
      .addError(S.Conflict)
      .addError(S.PayloadTooLarge)
      .addError(S.UnsupportedEncoding)
      .annotate(OpenApi.Description, "Replaces an audience's members (SPEC §6).")
  )
  .add(
    HttpApiEndpoint.put("syncTrait", "/admin/sources/:sourceId/traits/:traitName")
      .setPath(Schema.Struct({ sourceId: Schema.String, traitName: Schema.String }))
      .setPayload(S.TraitValues)
      .addSuccess(S.TraitSynced)
      .addError(S.InvalidRequest)
      .addError(S.NotFound)
      .addError(S.Conflict)
      .addError(S.PayloadTooLarge)
      .addError(S.UnsupportedEncoding)
      .annotate(OpenApi.Description, "Replaces a computed trait's values (SPEC §6).")
  )

export const AdminContract = HttpApi.make("hookrelay-admin")
  .add(sources)
  .add(messages)
  .add(deadLetters)
  .add(operations)
  .add(deletions)
  .add(audiences)
  .add(endpointsGroup)
  // Every route can meet a store that is down.
  .addError(S.StoreUnavailable)
  .middleware(AdminAuthentication)
  .annotate(OpenApi.Title, "hookrelay admin API")
  .annotate(
    OpenApi.Description,
    "Sources, messages, dead letters, deletions and audiences of a hookrelay server. " +
      "Every route needs `Authorization: Bearer <HOOKRELAY_ADMIN_TOKEN>`."
  )

/**
 * What `OpenApi.fromApi` writes for routes served by `HttpApiBuilder`, not true of these: its own
 * decode error (the routes answer `InvalidRequest`), and an empty `security` on each operation,
 * which in OpenAPI would lift the document's bearer requirement; and the repeated `$id`s below.
 */
const descriptionId = SchemaAST.DescriptionAnnotationId

interface SchemaJson {
  readonly $ref?: string
  readonly anyOf?: ReadonlyArray<SchemaJson>
}
interface ResponseJson {
  readonly description?: string
  readonly content?: { readonly [mediaType: string]: { readonly schema?: SchemaJson } }
}
interface OperationJson {
  readonly security: ReadonlyArray<unknown>
  readonly responses: { readonly [status: string]: ResponseJson }
}

const servedAsRouted = (generated: OpenApi.OpenAPISpec): OpenApi.OpenAPISpec => {
  const decodeError = "#/components/schemas/HttpApiDecodeError"
  const paths = Object.fromEntries(
    Object.entries(generated.paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as { readonly [method: string]: OperationJson }).map(([method, operation]) => {
          const { security, ...rest } = operation
          const responses = Object.fromEntries(
            Object.entries(rest.responses).flatMap(
              ([status, response]): Array<readonly [string, unknown]> => {
                const schema = response.content?.["application/json"]?.schema
                if (schema?.$ref === decodeError) return []
                const anyOf = schema?.anyOf?.filter((s) => s.$ref !== decodeError)
                if (schema === undefined || anyOf === undefined || anyOf.length === schema.anyOf?.length) {
                  return [[status, response]]
                }
                const kept = anyOf.length === 1 ? anyOf[0] : { ...schema, anyOf }
                const description = status === "400"
                  ? S.InvalidRequest.ast.annotations[descriptionId]
                  : response.description
                return [[status, { ...response, description, content: { "application/json": { schema: kept } } }]]
              }
            )
          )
          return [method, { ...rest, ...(security.length > 0 && { security }), responses }]
        })
      )
    ])
  )
  const { HttpApiDecodeError: _, Issue: __, PropertyKey: ___, ...schemas } = generated.components.schemas
  const document = {
    ...generated,
    paths: paths,
    components: { ...generated.components, schemas }
  }
  // Schema.Unknown and Schema.Object come out with the same `$id` wherever they occur: an id given twice, which
  // makes the document invalid. Without it such a schema means what it should (any value, any object).
  return JSON.parse(
    JSON.stringify(document, (key, value: unknown) => (key === "$id" ? undefined : value))
  ) as OpenApi.OpenAPISpec
}

let document: OpenApi.OpenAPISpec | undefined

/** The OpenAPI 3.1 document of the admin API (generated once), for the package's `version`. */
export const openApiDocument = (version: string): OpenApi.OpenAPISpec => {
  if (document === undefined) {
    const generated = servedAsRouted(OpenApi.fromApi(AdminContract))
    document = { ...generated, info: { ...generated.info, version } }
  }
  return document
}
