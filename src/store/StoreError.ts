import { Schema } from "effect"

/**
 * A store operation failed (database unreachable, constraint violated, corrupt row, …). The
 * `operation` names the store call; the `cause` keeps the driver's error for logs.
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message(): string {
    const detail = this.cause instanceof Error ? this.cause.message : String(this.cause)
    return `store.${this.operation} failed: ${detail}`
  }
}

/** `upsertSource` refused: another source already uses this write key (write keys identify sources). */
export class WriteKeyConflict extends Schema.TaggedError<WriteKeyConflict>()("WriteKeyConflict", {
  sourceId: Schema.String,
  conflictingSourceId: Schema.String
}) {
  override get message(): string {
    return `the write key of source ${this.sourceId} is already used by source ${this.conflictingSourceId}`
  }
}
