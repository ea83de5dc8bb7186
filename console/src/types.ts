// The admin API's JSON as the console reads and sends it: the Encoded side of the contract's schemas
// (src/ingest/Admin*Schemas.ts), so a contract change the console does not follow fails to compile.
// Types only: nothing of them is bundled. No DOM here: the console's pure modules and their tests share it.
import type { Schema } from "effect"
import type * as Destinations from "../../src/ingest/AdminDestinationSchemas.js"
import type * as Endpoints from "../../src/ingest/AdminEndpointSchemas.js"
import type * as Messages from "../../src/ingest/AdminMessageSchemas.js"
import type * as S from "../../src/ingest/AdminSchemas.js"
import type * as Secrets from "../../src/ingest/AdminSecretSchemas.js"
import type * as Sources from "../../src/ingest/AdminSourceSchemas.js"

/** A schema's JSON: its Encoded side. */
export type Json<A extends Schema.Top> = A["Encoded"]

/** An issue of an error body's `errors`: the field it is about. */
export type FieldIssue = Json<typeof S.InvalidRequest>["errors"][number]

export type SourceView = Json<typeof Sources.SourceView>
export type WebhooksView = NonNullable<SourceView["webhooks"]>
export type EndpointView = WebhooksView["endpoints"][number]
export type FilterRule = NonNullable<WebhooksView["filters"]>[number]
export type SigningScheme = NonNullable<WebhooksView["signing"]>
export type SigningSecretView = Json<typeof Secrets.SigningSecretView>
export type RotatedSecret = Json<typeof Secrets.RotatedSecretView>

/** The body of a source's PUT. */
export type SourceInput = Json<typeof Sources.SourceSettings>

/** A destination as the API shows it (REFERENCE §1a), its secrets masked. */
export type DestinationView = Json<typeof Sources.DestinationView>
export type SubscribeView = NonNullable<DestinationView["subscribe"]>
/** The body of a destination's PUT (its id is the path's). */
export type DestinationInput = Json<typeof Destinations.DestinationSettings>
/** The answer of a destination's PUT: its view, and the secret the save generated, if any. */
export type SavedDestination = Json<typeof Destinations.DestinationReplaced>

/** A property value a filter compares with: any JSON value. */
export type PropertyValue = NonNullable<FilterRule["if"]["properties"]>[string]

export type JobView = Json<typeof S.JobView>
export type JobStatus = JobView["status"]
export type AttemptView = Json<typeof S.AttemptView>
export type JobWithAttempts = Json<typeof S.JobWithAttemptsView>

/** A message's jobs with their attempts, as `GET /admin/messages/{id}` answers them. */
export type MessageJobs = Json<typeof S.MessageJobs>

/** A page of the message log (REFERENCE §12), one of its messages, and a message's state at one destination. */
export type MessageLogPage = Json<typeof Messages.MessageLogPageView>
export type LogMessageView = MessageLogPage["messages"][number]
export type LogDestinationView = LogMessageView["destinations"][number]

export type Backlog = Json<typeof S.Backlog>
export type Usage = Json<typeof S.UsageView>
export type UsageDay = Usage["days"][number]

export type EndpointHealthView = Json<typeof Endpoints.EndpointView>
export type EndpointWindow = EndpointHealthView["lastDay"]
/** The endpoint to enable or disable: (source, destination, URL), or a URL alone for every endpoint that has it. */
export type EndpointKey = Json<typeof Endpoints.EndpointUrl>

/** The body of a bulk replay or purge of dead letters. */
export type RecoveryFilter = Json<typeof Endpoints.RecoveryInput>
export type RecoveryResult = Json<typeof Endpoints.RecoveryView>
