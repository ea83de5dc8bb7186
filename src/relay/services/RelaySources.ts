import { Context, type Duration, type Effect } from "effect"
import type { InvalidAdminRequest } from "../../audiences/AudienceErrors.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { SourceConfig } from "../../domain/Settings.js"
import type { BlockedEndpoints } from "../../network/EgressPolicy.js"
import type { StoredSource } from "../../store/Model.js"
import type { StoreError, WriteKeyConflict } from "../../store/StoreError.js"
import type { RotatedSecret, SavedSource } from "../Relay.js"

export interface RelaySourcesShape {
  /**
   * Creates or replaces a source and its webhook settings (already validated as `SourceConfig`).
   * Fails with `BlockedEndpoints`, nothing stored, when an endpoint URL points at a loopback,
   * private or link-local address and private networks are not allowed (REFERENCE §8). Signing secrets and keys left
   * out are kept from the stored source; a Standard Webhooks scheme without a secret gets one (`generatedSecret`).
   */
  readonly putSource: (
    source: SourceConfig
  ) => Effect.Effect<SavedSource, BlockedEndpoints | WriteKeyConflict | StoreError>
  /**
   * Rotates a source's Standard Webhooks secret: a new primary (returned in full, once), and the others keep
   * signing for `keepOldFor` (a duration, default 24 hours) at most. At most 10 unexpired secrets.
   */
  readonly rotateSecret: (
    sourceId: string,
    keepOldFor?: Duration.Input
  ) => Effect.Effect<RotatedSecret, UnknownSource | InvalidAdminRequest | WriteKeyConflict | StoreError>
  readonly getSource: (sourceId: string) => Effect.Effect<StoredSource, UnknownSource | StoreError>
  readonly listSources: Effect.Effect<ReadonlyArray<StoredSource>, StoreError>
  /** Removes a source; its jobs stay until delivered, dead or purged. */
  readonly deleteSource: (sourceId: string) => Effect.Effect<void, UnknownSource | StoreError>
}

/** The sources and their webhook signing, as the admin API manages them. */
export class RelaySources extends Context.Service<RelaySources, RelaySourcesShape>()("hookrelay/RelaySources") {}
