import type { FieldIssue } from "../domain/Issues.js"
import { defaultLogLimit, logQueryIssues, type LogStatus, logStatuses, type MessageLogQuery } from "../relay/Relay.js"

/**
 * `GET /admin/messages`'s query parameters (REFERENCE §12) as the log's query, and every parameter it cannot take,
 * each issue naming the parameter. A filter may repeat (any of its values); the others are given once.
 */

type Params = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const filters = {
  sourceIds: "sourceId",
  destinationIds: "destinationId",
  types: "type",
  events: "event",
  userIds: "userId",
  anonymousIds: "anonymousId"
} as const

// A time with its zone, or a date (UTC midnight); a time without a zone is read as UTC, never as the server's zone.
const isoTime = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/

/** Every parameter of the listing: another (a misspelt filter) is refused rather than listing everything. */
const known = new Set([...Object.values(filters), "status", "since", "until", "after", "limit"])

const parseTime = (text: string): number => {
  const match = isoTime.exec(text)
  if (match === null) return Number.NaN
  const withZone = text.length > 10 && match[1] === undefined ? `${text}Z` : text
  return Date.parse(withZone.replace(" ", "T"))
}

export const parseLogParams = (
  params: Params,
  callerSources: ReadonlyArray<string> | null
): { readonly query: MessageLogQuery; readonly issues: ReadonlyArray<FieldIssue> } => {
  const issues: Array<FieldIssue> = Object.keys(params).filter((name) => !known.has(name)).map((name) => ({
    path: name,
    message: "is not a parameter of this listing"
  }))
  const many = (name: string): ReadonlyArray<string> | undefined => {
    const value = params[name]
    if (value === undefined) return undefined
    const list = typeof value === "string" ? [value] : value
    if (list.some((item) => item === "")) issues.push({ path: name, message: "must not be empty" })
    return list
  }
  const once = (name: string): string | undefined => {
    const value = params[name]
    if (value === undefined || value === "") return undefined
    if (typeof value !== "string") {
      issues.push({ path: name, message: "must be given once" })
      return undefined
    }
    return value
  }
  const time = (name: "since" | "until") => {
    const text = once(name)
    if (text === undefined) return undefined
    const millis = parseTime(text)
    if (!Number.isFinite(millis)) {
      issues.push({ path: name, message: "must be an ISO 8601 time, e.g. 2026-01-31T12:00:00Z" })
      return undefined
    }
    return millis
  }

  const given = Object.fromEntries(
    Object.entries(filters).map(([field, name]) => [field, many(name)])
  ) as { -readonly [K in keyof typeof filters]: ReadonlyArray<string> | undefined }
  const statuses = many("status")
  const unknown = (statuses ?? []).filter((status) => status !== "" && !logStatuses.includes(status as LogStatus))
  if (unknown.length > 0) {
    issues.push({ path: "status", message: `${unknown.join(", ")}: must be one of ${logStatuses.join(", ")}` })
  }
  const since = time("since")
  const until = time("until")
  if (since !== undefined && until !== undefined && until <= since) {
    issues.push({ path: "until", message: "must be later than since" })
  }
  const after = once("after")
  const limitText = once("limit")
  const limit = limitText === undefined ? defaultLogLimit : /^\d{1,9}$/.test(limitText) ? Number(limitText) : NaN
  const query: MessageLogQuery = {
    ...given,
    // A key limited to sources that names none lists its own.
    sourceIds: given.sourceIds ?? callerSources ?? undefined,
    statuses: unknown.length > 0 ? undefined : statuses as ReadonlyArray<LogStatus> | undefined,
    since,
    until,
    after,
    limit
  }
  const named = new Set(issues.map((issue) => issue.path))
  return { query, issues: [...issues, ...logQueryIssues(query).filter((issue) => !named.has(issue.path))] }
}
