import { Context, type Effect } from "effect"
import type { InvalidAdminRequest } from "../../audiences/AudienceErrors.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { StoreError } from "../../store/StoreError.js"
import type { EndpointHealth, RecoveryRequest, RecoveryResult } from "../RelayEndpoints.js"

export interface RelayEndpointsShape {
  /**
   * The health of each URL of a source's destinations: state, failures, last success and failure, last hour and day.
   * Circuits, rate limits, statistics and disabling are still by URL: destinations sharing a URL share them.
   */
  readonly endpointHealth: (
    sourceId: string
  ) => Effect.Effect<ReadonlyArray<EndpointHealth>, UnknownSource | StoreError>
  /** Enables a disabled URL (in every process) with a fresh health; `false` when it was not disabled. */
  readonly enableEndpoint: (url: string) => Effect.Effect<boolean, StoreError>
  /** Disables a URL: its jobs are dead-lettered "endpoint disabled" until it is enabled again. */
  readonly disableEndpoint: (url: string, reason: string) => Effect.Effect<void, StoreError>
  /** Replays every dead letter of a source the filter takes (`dryRun`: only counts them). */
  readonly replayDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
  /** Deletes every dead letter of a source the filter takes, with its attempts (`dryRun`: only counts them). */
  readonly purgeDeadLetters: (
    request: RecoveryRequest
  ) => Effect.Effect<RecoveryResult, InvalidAdminRequest | UnknownSource | StoreError>
}

/** Endpoint URLs: their health, enabling and disabling them, bulk recovery of their dead letters. */
export class RelayEndpoints
  extends Context.Service<RelayEndpoints, RelayEndpointsShape>()("hookrelay/RelayEndpoints")
{}
