import { Formatter, Schema } from "effect"

/**
 * A store operation failed (database unreachable, constraint violated, corrupt row, …). The
 * `operation` names the store call; the `cause` keeps the driver's error for logs.
 */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  cause: Schema.Defect()
}) {
  override get message(): string {
    // Not `String(cause)` for an object: one without a prototype (as some driver values are) throws.
    const cause: unknown = this.cause
    const detail = cause instanceof Error
      ? cause.message
      : typeof cause === "object" && cause !== null
      ? Formatter.format(cause)
      : String(cause)
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

/**
 * Driver codes that mean the store as a whole cannot answer now (as opposed to one bad statement or row): the
 * connection was refused, lost or is shutting down (PostgreSQL classes 08, 57P, 53, the socket errors), or the SQLite
 * file cannot be written (full disk, I/O error, read-only, locked out).
 */
const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENOSPC",
  "EIO",
  "EROFS",
  "SQLITE_FULL",
  "SQLITE_IOERR",
  "SQLITE_CANTOPEN",
  "SQLITE_READONLY",
  "SQLITE_BUSY",
  "SQLITE_PROTOCOL"
])

const unavailableMessage =
  /connection terminated|connection closed|connection refused|server closed the connection|timeout exceeded when trying to connect|database system is (starting up|shutting down|in recovery)|terminating connection|the sqlite thread|disk is full|database or disk is full|disk i\/o error/i

const isUnavailableCode = (code: unknown): boolean =>
  typeof code === "string" &&
  (unavailableCodes.has(code) || code.startsWith("SQLITE_IOERR") || code.startsWith("SQLITE_FULL") ||
    code.startsWith("08") || code.startsWith("57P") || code.startsWith("53"))

/**
 * Whether `error` says the store cannot answer at all (unreachable, restarting, full) rather than that one request was
 * wrong: such errors make readiness fail and are logged once per outage (`StoreHealth`). Walks the driver's cause
 * chain (and the errors of an `AggregateError`, as `net` gives for several addresses).
 */
export const isStoreUnavailable = (error: StoreError): boolean => {
  const seen = new Set<unknown>()
  const visit = (value: unknown, depth: number): boolean => {
    if (value === null || typeof value !== "object" || seen.has(value) || depth > 8) return false
    seen.add(value)
    const record = value as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown }
    if (isUnavailableCode(record.code)) return true
    if (typeof record.message === "string" && unavailableMessage.test(record.message)) return true
    if (Array.isArray(record.errors) && record.errors.some((inner) => visit(inner, depth + 1))) return true
    return visit(record.cause, depth + 1)
  }
  return visit(error.cause, 0)
}

/** The driver's own words for an unavailable store, for `/readyz` and the log: the innermost message. */
export const storeErrorDetail = (error: StoreError): string => {
  let value: unknown = error.cause
  let detail = error.message
  for (let depth = 0; depth < 8 && value !== null && typeof value === "object"; depth += 1) {
    const record = value as { message?: unknown; cause?: unknown; errors?: unknown }
    if (typeof record.message === "string" && record.message !== "") detail = record.message
    value = record.cause ?? (Array.isArray(record.errors) ? record.errors[0] : undefined)
  }
  return detail
}
