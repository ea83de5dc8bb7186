import { Context, type Duration, type Effect } from "effect"
import type { InvalidAdminRequest } from "../../audiences/AudienceErrors.js"
import type { UnknownDestination } from "../../domain/DestinationErrors.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { Destination } from "../../domain/Settings.js"
import type { BlockedEndpoints } from "../../network/EgressPolicy.js"
import type { StoreError } from "../../store/StoreError.js"
import type { RotatedSecret } from "../Relay.js"

/** A destination as `putDestination` saved it: whether it is new, and the Standard Webhooks secret it generated. */
export interface SavedDestination {
  readonly destination: Destination
  readonly created: boolean
  /** The `whsec_` secret this save generated, in full: shown this once. */
  readonly generatedSecret?: string
}

export interface RelayDestinationsShape {
  /** A source's destinations, the destination `webhooks` first (REFERENCE §1a). */
  readonly listDestinations: (
    sourceId: string
  ) => Effect.Effect<ReadonlyArray<Destination>, UnknownSource | StoreError>
  /**
   * Creates or replaces one destination of a source (already validated as `Destination`), the others untouched.
   * Signing secrets and keys left out are kept from the destination it replaces, as `putSource` does. Refused, nothing
   * stored: an endpoint the SSRF guard blocks (REFERENCE §8), a 21st destination.
   */
  readonly putDestination: (
    sourceId: string,
    destination: Destination
  ) => Effect.Effect<SavedDestination, UnknownSource | InvalidAdminRequest | BlockedEndpoints | StoreError>
  /**
   * Removes a destination; its pending jobs become dead letters "destination deleted" at once (the ones being
   * delivered at the claim after their run), replayable only once a destination with that id exists again.
   */
  readonly deleteDestination: (
    sourceId: string,
    destinationId: string
  ) => Effect.Effect<void, UnknownSource | UnknownDestination | StoreError>
  /** `RelaySources.rotateSecret` for one destination: a new primary secret, the others signing for `keepOldFor`. */
  readonly rotateSecret: (
    sourceId: string,
    destinationId: string,
    keepOldFor?: Duration.Input
  ) => Effect.Effect<RotatedSecret, UnknownSource | UnknownDestination | InvalidAdminRequest | StoreError>
}

/** A source's destinations one at a time (REFERENCE §1a): list, put, delete, rotate a secret. */
export class RelayDestinations
  extends Context.Service<RelayDestinations, RelayDestinationsShape>()("hookrelay/RelayDestinations")
{}
