import * as Schema from "effect/Schema"

/** Why the pending jobs of a deleted destination are dead letters, and why one is refused a replay (REFERENCE §1a). */
export const destinationDeletedReason = "destination deleted"

/** The source has no destination with this id (HTTP 404); a dead letter of a deleted destination is not replayed. */
export class UnknownDestination extends Schema.TaggedError<UnknownDestination>()("UnknownDestination", {
  sourceId: Schema.String,
  destinationId: Schema.String
}) {
  override get message() {
    return `source ${this.sourceId} has no destination ${this.destinationId}`
  }
}
