import type * as Destinations from "../../src/ingest/AdminDestinationSchemas.js"
import type * as Endpoints from "../../src/ingest/AdminEndpointSchemas.js"
import type * as Keys from "../../src/ingest/AdminKeySchemas.js"
import type * as Messages from "../../src/ingest/AdminMessageSchemas.js"
import type * as S from "../../src/ingest/AdminSchemas.js"
import type * as Secrets from "../../src/ingest/AdminSecretSchemas.js"
import type * as Sources from "../../src/ingest/AdminSourceSchemas.js"
import type { CheckedWires, EndpointName, Route } from "./contract.js"
import type { Json } from "./types.js"

// The admin calls the console makes (REFERENCE §1a, §7, §7c, §10, §11), each named by its endpoint in the contract.
// The contract is not imported at run time (it would bundle effect, and its domain
// modules need node:crypto): the types check each call's group, method and JSON, and
// test/ingest/ConsoleContract.test.ts its path.

export type Wires = CheckedWires<{
  readonly listSources: { readonly answer: Json<typeof Sources.SourceList> }
  readonly getSource: { readonly answer: Json<typeof Sources.SourceView> }
  readonly putSource: {
    readonly body: Json<typeof Sources.SourceSettings>
    readonly answer: Json<typeof Sources.SourceView>
  }
  readonly deleteSource: { readonly answer: void }
  readonly rotateSecret: {
    readonly body: Json<typeof Secrets.RotateSecretInput>
    readonly answer: Json<typeof Secrets.RotatedSecretView>
  }
  readonly listDestinations: { readonly answer: Json<typeof Destinations.DestinationList> }
  readonly putDestination: {
    readonly body: Json<typeof Destinations.DestinationSettings>
    readonly answer: Json<typeof Destinations.DestinationReplaced>
  }
  readonly deleteDestination: { readonly answer: void }
  readonly rotateDestinationSecret: {
    readonly body: Json<typeof Secrets.RotateSecretInput>
    readonly answer: Json<typeof Secrets.RotatedSecretView>
  }
  readonly sourceUsage: { readonly answer: Json<typeof S.UsageView> }
  readonly listMessages: { readonly answer: Json<typeof Messages.MessageLogPageView> }
  readonly getMessage: { readonly answer: Json<typeof S.MessageJobs> }
  readonly listDeadLetters: { readonly answer: Json<typeof S.DeadLetters> }
  readonly replayDeadLetter: { readonly answer: Json<typeof S.Replayed> }
  readonly backlog: { readonly answer: Json<typeof S.Backlog> }
  /** "this document": the contract says only that it is an object (its shape is OpenAPI's). */
  readonly openApi: { readonly answer: object }
  readonly listEndpoints: { readonly answer: Json<typeof Endpoints.EndpointList> }
  readonly enableEndpoint: {
    readonly body: Json<typeof Endpoints.EndpointUrl>
    readonly answer: Json<typeof Endpoints.EndpointChanged>
  }
  readonly replayDeadLetters: {
    readonly body: Json<typeof Endpoints.RecoveryInput>
    readonly answer: Json<typeof Endpoints.RecoveryView>
  }
  readonly purgeDeadLetters: {
    readonly body: Json<typeof Endpoints.RecoveryInput>
    readonly answer: Json<typeof Endpoints.RecoveryView>
  }
  readonly keySelf: { readonly answer: Json<typeof Keys.KeySelf> }
}>

export type CallName = keyof Wires & EndpointName

export const calls: { readonly [N in CallName]: Route<N> } = {
  listSources: { group: "sources", method: "GET", path: "/admin/sources" },
  getSource: { group: "sources", method: "GET", path: "/admin/sources/:sourceId" },
  putSource: { group: "sources", method: "PUT", path: "/admin/sources/:sourceId" },
  deleteSource: { group: "sources", method: "DELETE", path: "/admin/sources/:sourceId" },
  rotateSecret: { group: "sources", method: "POST", path: "/admin/sources/:sourceId/secrets/rotate" },
  listDestinations: { group: "destinations", method: "GET", path: "/admin/sources/:sourceId/destinations" },
  putDestination: {
    group: "destinations",
    method: "PUT",
    path: "/admin/sources/:sourceId/destinations/:destinationId"
  },
  deleteDestination: {
    group: "destinations",
    method: "DELETE",
    path: "/admin/sources/:sourceId/destinations/:destinationId"
  },
  rotateDestinationSecret: {
    group: "destinations",
    method: "POST",
    path: "/admin/sources/:sourceId/destinations/:destinationId/secrets/rotate"
  },
  sourceUsage: { group: "sources", method: "GET", path: "/admin/sources/:sourceId/usage" },
  listMessages: { group: "messages", method: "GET", path: "/admin/messages" },
  getMessage: { group: "messages", method: "GET", path: "/admin/messages/:messageId" },
  listDeadLetters: { group: "deadLetters", method: "GET", path: "/admin/dead-letters" },
  replayDeadLetter: { group: "deadLetters", method: "POST", path: "/admin/dead-letters/:jobId/replay" },
  backlog: { group: "operations", method: "GET", path: "/admin/backlog" },
  openApi: { group: "operations", method: "GET", path: "/admin/openapi.json" },
  listEndpoints: { group: "endpoints", method: "GET", path: "/admin/endpoints" },
  enableEndpoint: { group: "endpoints", method: "POST", path: "/admin/endpoints/enable" },
  replayDeadLetters: { group: "endpoints", method: "POST", path: "/admin/dead-letters/replay" },
  purgeDeadLetters: { group: "endpoints", method: "POST", path: "/admin/dead-letters/purge" },
  keySelf: { group: "keys", method: "GET", path: "/admin/keys/self" }
}
