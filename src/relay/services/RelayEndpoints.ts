import { Context, type Effect } from "effect"
import type { InvalidAdminRequest } from "../../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../../domain/DestinationErrors.js"
import type { EndpointKey, EndpointSelector } from "../../domain/EndpointKey.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { StoreError } from "../../store/StoreError.js"
import type { EndpointHealth, RecoveryRequest, RecoveryResult } from "../RelayEndpoints.js"

export interface RelayEndpointsShape {
  /**
   * The health of each endpoint (source, destination, URL: REFERENCE §7b) of a source's destinations, or of one of them:
   * state, failures, last success and failure (circuit, rate limit and disabled state are the endpoint's own), and the
   * last hour and day of the URL's recorded attempts.
   */
  readonly endpointHealth: (
    sourceId: string,
    destinationId?: string
  ) => Effect.Effect<ReadonlyArray<EndpointHealth>, UnknownSource | UnknownDestination | StoreError>
  /** Enables the disabled endpoints the selector takes (in every process) with a fresh health; the ones it enabled. */
  readonly enableEndpoint: (selector: EndpointSelector) => Effect.Effect<ReadonlyArray<EndpointKey>, StoreError>
  /**
   * Disables an endpoint, or every configured endpoint a URL (and a source) names: its jobs are dead-lettered
   * "endpoint disabled" until it is enabled again. The endpoints it disabled.
   */
  readonly disableEndpoint: (
    selector: EndpointSelector,
    reason: string
  ) => Effect.Effect<ReadonlyArray<EndpointKey>, StoreError>
  /** Replays every dead letter of a source the filter takes (`dryRun`: only counts them). */
  readonly replayDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
  /** Deletes every dead letter of a source the filter takes, with its attempts (`dryRun`: only counts them). */
  readonly purgeDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
}

/** Endpoints (source, destination, URL): their health, enabling and disabling them, bulk recovery of dead letters. */
export class RelayEndpoints
  extends Context.Service<RelayEndpoints, RelayEndpointsShape>()("hookrelay/RelayEndpoints")
{}
