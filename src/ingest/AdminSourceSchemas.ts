import { Schema, Struct } from "effect"
import { Filters } from "../domain/Filters.js"
import { SourceConfig } from "../domain/Settings.js"
import { Timestamp } from "./AdminSchemas.js"
import { signingViewFields } from "./AdminSecretSchemas.js"

/** The admin API's source bodies (the rest are in `AdminSchemas`, which the web console's types read). */

/** The body of `PUT /admin/sources/{sourceId}`: a source's settings (its id is the path's). */
export const SourceSettings = Schema.toEncoded(SourceConfig.mapFields(Struct.omit(["id"]))).annotate({
  identifier: "SourceSettings"
})

const EndpointView = Schema.Struct({
  url: Schema.String,
  headers: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.String).annotate({ description: "credentials masked" })
  )
})

export const SourceView = Schema.Struct({
  id: Schema.String,
  writeKey: Schema.String.annotate({ description: "masked" }),
  webhooks: Schema.optionalKey(
    Schema.Struct({
      enabled: Schema.Boolean,
      hasSharedSecret: Schema.Boolean,
      sharedSecret: Schema.optionalKey(Schema.String.annotate({ description: "masked" })),
      endpoints: Schema.Array(EndpointView),
      filters: Schema.optionalKey(Schema.toEncoded(Filters)),
      ...signingViewFields
    })
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  generatedSecret: Schema.optionalKey(
    Schema.String.annotate({
      description: "the whsec_ secret this save generated, in full: shown only in this answer"
    })
  )
}).annotate({ identifier: "Source" })

export const SourceList = Schema.Struct({ sources: Schema.Array(SourceView) })
