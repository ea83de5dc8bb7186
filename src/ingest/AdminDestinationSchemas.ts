import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { WebhookSettings } from "../domain/Settings.js"
import * as S from "./AdminSchemas.js"
import { requires } from "./AdminScopes.js"
import * as Sec from "./AdminSecretSchemas.js"
import { DestinationView } from "./AdminSourceSchemas.js"

/** A source's destinations one at a time (REFERENCE §1a): bodies and routes. */

/** The body of `PUT /admin/sources/{sourceId}/destinations/{destinationId}`: a destination (its id is the path's). */
export const DestinationSettings = Schema.toEncoded(WebhookSettings).annotate({ identifier: "DestinationSettings" })

export const DestinationList = Schema.Struct({ destinations: Schema.Array(DestinationView) }).annotate({
  identifier: "DestinationList"
})

const savedFields = {
  ...DestinationView.fields,
  generatedSecret: Schema.optionalKey(
    Schema.String.annotate({ description: "the whsec_ secret this save generated, in full: shown only in this answer" })
  )
}

/** The answer of a PUT that replaced the destination (200) or created it (201). */
export const DestinationReplaced = Schema.Struct(savedFields).annotate({ identifier: "DestinationReplaced" })
export const DestinationCreated = Schema.Struct(savedFields).annotate({ identifier: "DestinationCreated" }).pipe(
  HttpApiSchema.status(201)
)

const DestinationPath = { sourceId: Schema.String, destinationId: Schema.String }
const errors = <const E extends ReadonlyArray<Schema.Top>>(...list: E) => [...list, S.StoreUnavailable] as const

export const destinationsGroup = HttpApiGroup.make("destinations")
  .add(
    HttpApiEndpoint.get("listDestinations", "/admin/sources/:sourceId/destinations", {
      params: { sourceId: Schema.String },
      success: DestinationList,
      error: errors(S.NotFound)
    }).annotate(OpenApi.Description, "A source's destinations, `webhooks` first; secrets masked.")
      .annotateMerge(requires("sources:read"))
  )
  .add(
    HttpApiEndpoint.put("putDestination", "/admin/sources/:sourceId/destinations/:destinationId", {
      params: DestinationPath,
      payload: DestinationSettings,
      success: [DestinationReplaced, DestinationCreated],
      error: errors(S.InvalidRequest, S.NotFound, S.PayloadTooLarge)
    }).annotate(OpenApi.Description, "Creates (201) or replaces (200) one destination; the others are kept.")
      .annotateMerge(requires("sources:write"))
  )
  .add(
    HttpApiEndpoint.delete("deleteDestination", "/admin/sources/:sourceId/destinations/:destinationId", {
      params: DestinationPath,
      success: HttpApiSchema.NoContent,
      error: errors(S.NotFound)
    }).annotate(OpenApi.Description, "Removes a destination; its pending jobs become dead letters.")
      .annotateMerge(requires("sources:write"))
  )
  .add(
    HttpApiEndpoint.post(
      "rotateDestinationSecret",
      "/admin/sources/:sourceId/destinations/:destinationId/secrets/rotate",
      {
        params: DestinationPath,
        payload: Sec.RotateSecretInput,
        success: Sec.RotatedSecretView,
        error: errors(S.InvalidRequest, S.NotFound)
      }
    ).annotate(OpenApi.Description, "A new Standard Webhooks secret for the destination (shown once).")
      .annotateMerge(requires("sources:write"))
  )
