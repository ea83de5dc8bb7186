import { Schema } from "effect"

/**
 * Ingest refused because hookrelay is overloaded; nothing of the request was stored (HTTP 503 with
 * `Retry-After`). `backlog`: more jobs wait for delivery than `maxBacklog`. `busy`: no ingest slot
 * came free within the admission wait (the store is slow or too many requests are committing).
 */
export class Overloaded extends Schema.TaggedError<Overloaded>()("Overloaded", {
  reason: Schema.Literals(["backlog", "busy"]),
  retryAfterSeconds: Schema.Number
}) {
  override get message() {
    return this.reason === "backlog"
      ? "too many jobs are waiting for delivery; nothing was stored, retry later"
      : "the store is busy; nothing was stored, retry later"
  }
}
