import { Schema } from "effect"
import type { UnknownSource } from "../domain/IngestErrors.js"
import { FieldIssue } from "../domain/Issues.js"
import type { StoreError } from "../store/StoreError.js"

/**
 * The refusals of deletion requests, audience syncs and computed-trait syncs (REFERENCE §5, §6). They
 * cross the library API, so they are `Schema.TaggedError`s; the admin API maps each to its answer.
 */

/** The input is invalid (HTTP 400): each issue names the field (`userIds[3]`, `sourceIds`, …). */
export class InvalidAdminRequest extends Schema.TaggedError<InvalidAdminRequest>()("InvalidAdminRequest", {
  errors: Schema.Array(FieldIssue)
}) {
  override get message() {
    return this.errors.map((issue) => `${issue.path || "(body)"}: ${issue.message}`).join("; ")
  }
}

/** A deletion request names sources that do not exist (HTTP 400, naming them); nothing was recorded. */
export class UnknownSources extends Schema.TaggedError<UnknownSources>()("UnknownSources", {
  sourceIds: Schema.Array(Schema.String)
}) {
  override get message() {
    return `unknown sources: ${this.sourceIds.join(", ")}`
  }
}

/** No deletion request has this id (HTTP 404). */
export class UnknownDeletion extends Schema.TaggedError<UnknownDeletion>()("UnknownDeletion", {
  id: Schema.String
}) {
  override get message() {
    return `no deletion request ${this.id}`
  }
}

/** Another sync of the same audience is running, in this process or another (HTTP 409): try again later. */
export class AudienceSyncInProgress extends Schema.TaggedError<AudienceSyncInProgress>()("AudienceSyncInProgress", {
  sourceId: Schema.String,
  audience: Schema.String,
  /** When the other sync's lease runs out if it stops renewing it (epoch milliseconds). */
  leaseExpiresAt: Schema.Number
}) {
  override get message() {
    return `audience ${this.audience} of source ${this.sourceId} is being synced by another request`
  }
}

/**
 * This sync lost its lease to another sync of the same audience (it stalled past the lease). The
 * chunks it applied stand, each with its identify messages; run the sync again to finish it.
 */
export class AudienceSyncInterrupted extends Schema.TaggedError<AudienceSyncInterrupted>()(
  "AudienceSyncInterrupted",
  { sourceId: Schema.String, audience: Schema.String }
) {
  override get message() {
    return `the sync of audience ${this.audience} of source ${this.sourceId} was taken over by another sync`
  }
}

/**
 * Another audience of the source is already sent as this property (HTTP 409): both would set and
 * clear the same user trait.
 */
export class AudiencePropertyTaken extends Schema.TaggedError<AudiencePropertyTaken>()("AudiencePropertyTaken", {
  sourceId: Schema.String,
  audience: Schema.String,
  property: Schema.String,
  takenBy: Schema.String
}) {
  override get message() {
    return `property ${this.property} of source ${this.sourceId} already belongs to audience ${this.takenBy}`
  }
}

/** Every way `RelayAudiences.syncAudience` can fail. */
export type AudienceSyncError =
  | InvalidAdminRequest
  | UnknownSource
  | AudienceSyncInProgress
  | AudienceSyncInterrupted
  | AudiencePropertyTaken
  | StoreError
