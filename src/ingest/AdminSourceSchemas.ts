import { Schema, Struct } from "effect"
import { Filters } from "../domain/Filters.js"
import { SourceConfig } from "../domain/Settings.js"
import { Subscribe } from "../domain/Subscription.js"
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

/** What the view shows of one destination (REFERENCE §1a), its secrets masked. */
const destinationViewFields = {
  enabled: Schema.Boolean,
  name: Schema.optionalKey(Schema.String),
  hasSharedSecret: Schema.Boolean,
  sharedSecret: Schema.optionalKey(Schema.String.annotate({ description: "masked" })),
  endpoints: Schema.Array(EndpointView),
  filters: Schema.optionalKey(Schema.toEncoded(Filters)),
  subscribe: Schema.optionalKey(Schema.toEncoded(Subscribe)),
  retryWindow: Schema.optionalKey(Schema.String),
  timeout: Schema.optionalKey(Schema.String),
  ...signingViewFields
}

export const DestinationView = Schema.Struct({ id: Schema.String, ...destinationViewFields }).annotate({
  identifier: "Destination"
})

export const SourceView = Schema.Struct({
  id: Schema.String,
  writeKey: Schema.String.annotate({ description: "masked" }),
  webhooks: Schema.optionalKey(
    Schema.Struct(destinationViewFields).annotate({ description: "the destination `webhooks`" })
  ),
  destinations: Schema.optionalKey(
    Schema.Array(DestinationView).annotate({ description: "the destinations other than `webhooks`; absent when none" })
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  generatedSecret: Schema.optionalKey(
    Schema.String.annotate({
      description: "the whsec_ secret this save generated for `webhooks`, in full: shown only in this answer"
    })
  ),
  generatedSecrets: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.String).annotate({
      description: "the whsec_ secrets this save generated for other destinations, by id, in full: only in this answer"
    })
  )
}).annotate({ identifier: "Source" })

export const SourceList = Schema.Struct({ sources: Schema.Array(SourceView) })
