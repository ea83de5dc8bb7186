import { Context, type Effect } from "effect"
import type {
  AudienceSyncError,
  InvalidAdminRequest,
  UnknownDeletion,
  UnknownSources
} from "../../audiences/AudienceErrors.js"
import type { AudienceSyncResult } from "../../audiences/AudienceSync.js"
import type { TraitSyncResult } from "../../audiences/ComputedTraits.js"
import type { DeletionRequest, DeletionStatus } from "../../audiences/Deletions.js"
import type { TraitValue } from "../../audiences/Input.js"
import type { UnknownSource } from "../../domain/IngestErrors.js"
import type { StoreError } from "../../store/StoreError.js"

export interface RelayAudiencesShape {
  /**
   * Deletion request (REFERENCE §5) for `sourceIds` (default: every source), in one transaction: one
   * delete notification job per covered source whose destination is enabled; the user's jobs not
   * delivered yet (pending or dead — not the ones being delivered at this moment) removed.
   */
  readonly deleteUser: (
    userId: string,
    sourceIds?: ReadonlyArray<string>
  ) => Effect.Effect<DeletionRequest, InvalidAdminRequest | UnknownSources | StoreError>
  /** A deletion request and each notification's job status. */
  readonly getDeletion: (id: string) => Effect.Effect<DeletionStatus, UnknownDeletion | StoreError>
  /**
   * Sets an audience's full membership (REFERENCE §6): an identify `{<snake_case name>: true|false}`
   * is enqueued for each user added or removed. Applied in chunks; see `makeAudienceSync`.
   */
  readonly syncAudience: (
    sourceId: string,
    audienceName: string,
    userIds: ReadonlyArray<string>
  ) => Effect.Effect<
    AudienceSyncResult,
    AudienceSyncError
  >
  /**
   * Updates a computed trait for the users in `values` (others are left alone; `null` clears):
   * an identify `{<snake_case name>: value}` for each user whose value is new or different.
   */
  readonly syncComputedTrait: (
    sourceId: string,
    traitName: string,
    values: Readonly<Record<string, TraitValue>>
  ) => Effect.Effect<TraitSyncResult, InvalidAdminRequest | UnknownSource | StoreError>
}

/** Deletion requests (REFERENCE §5), audience syncs and computed traits (REFERENCE §6). */
export class RelayAudiences
  extends Context.Service<RelayAudiences, RelayAudiencesShape>()("hookrelay/RelayAudiences")
{}
