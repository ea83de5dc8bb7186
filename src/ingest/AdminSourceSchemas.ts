import { Schema } from "effect"
import { Filters } from "../domain/Filters.js"
import { SourceConfig } from "../domain/Settings.js"
import { Timestamp } from "./AdminSchemas.js"
import { signingViewFields } from "./AdminSecretSchemas.js"

/** The admin API's source bodies (the rest are in `AdminSchemas`, which the web console's types read). */

/** The body of `PUT /admin/sources/{sourceId}`: a source's settings (its id is the path's). */
export const SourceSettings = Schema.encodedSchema(SourceConfig.pipe(Schema.omit("id"))).annotations({
  identifier: "SourceSettings"
})

const EndpointView = Schema.Struct({
  url: Schema.String,
  headers: Schema.optionalWith(
    Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
      description: "credentials masked"
    }),
    { exact: true }
  )
})

export const SourceView = Schema.Struct({
  id: Schema.String,
  writeKey: Schema.String.annotations({ description: "masked" }),
  webhooks: Schema.optionalWith(
    Schema.Struct({
      enabled: Schema.Boolean,
      hasSharedSecret: Schema.Boolean,
      sharedSecret: Schema.optionalWith(Schema.String.annotations({ description: "masked" }), { exact: true }),
      endpoints: Schema.Array(EndpointView),
      filters: Schema.optionalWith(Schema.encodedSchema(Filters), { exact: true }),
      ...signingViewFields
    }),
    { exact: true }
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  generatedSecret: Schema.optionalWith(
    Schema.String.annotations({
      description: "the whsec_ secret this save generated, in full: shown only in this answer"
    }),
    { exact: true }
  )
}).annotations({ identifier: "Source" })

export const SourceList = Schema.Struct({ sources: Schema.Array(SourceView) })
