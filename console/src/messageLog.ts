// The message log page's filters (REFERENCE §12) and the console URL that holds them, so a listing can be linked to
// and survives a reload. No DOM here: the console's pure modules and their tests share it.

export const logStatuses = ["pending", "delivering", "delivered", "dead", "filtered"] as const
export const messageTypes = ["track", "identify", "page", "screen", "group", "alias"] as const

export interface LogFilters {
  /** `null`: none chosen yet (the page picks the first source); `""`: every source. */
  readonly sourceId: string | null
  readonly destinationId: string
  readonly statuses: ReadonlyArray<string>
  readonly type: string
  readonly event: string
  readonly userId: string
  readonly anonymousId: string
  /** ISO 8601, or "". */
  readonly since: string
  readonly until: string
  /** Messages a page holds; "" for the default. Only in the URL (`&limit=`), not a control. */
  readonly limit: string
}

/** Messages a page holds unless the URL says otherwise. */
export const defaultPageSize = 50

export const filtersOf = (query: URLSearchParams): LogFilters => ({
  sourceId: query.has("sourceId") ? query.get("sourceId") : null,
  destinationId: query.get("destinationId") ?? "",
  statuses: query.getAll("status").filter((status) => status !== ""),
  type: query.get("type") ?? "",
  event: query.get("event") ?? "",
  userId: query.get("userId") ?? "",
  anonymousId: query.get("anonymousId") ?? "",
  since: query.get("since") ?? "",
  until: query.get("until") ?? "",
  limit: query.get("limit") ?? ""
})

/** The console path of a listing: its filters, and the cursor of the page (none: the newest). */
export const logPath = (filters: LogFilters, after?: string): string => {
  const query = new URLSearchParams()
  if (filters.sourceId !== null) query.set("sourceId", filters.sourceId)
  const single = ["destinationId", "type", "event", "userId", "anonymousId", "since", "until", "limit"] as const
  for (const status of filters.statuses) query.append("status", status)
  for (const name of single) if (filters[name] !== "") query.set(name, filters[name])
  if (after !== undefined && after !== "") query.set("after", after)
  const text = query.toString()
  return text === "" ? "/messages" : `/messages?${text}`
}

/** The admin API's query for a page of the listing (`GET /admin/messages`). */
export const logQuery = (filters: LogFilters, after: string) => {
  const given = (value: string) => (value === "" ? undefined : value)
  return {
    sourceId: given(filters.sourceId ?? ""),
    destinationId: given(filters.destinationId),
    status: filters.statuses.length === 0 ? undefined : filters.statuses,
    type: given(filters.type),
    event: given(filters.event),
    userId: given(filters.userId),
    anonymousId: given(filters.anonymousId),
    since: given(filters.since),
    until: given(filters.until),
    after: given(after),
    limit: filters.limit === "" ? String(defaultPageSize) : filters.limit
  }
}

const pad = (n: number) => String(n).padStart(2, "0")

/** An ISO time as a `datetime-local` input shows it: the browser's local time, to the minute. */
export const toLocalInput = (iso: string): string => {
  const date = new Date(iso)
  if (iso === "" || Number.isNaN(date.getTime())) return ""
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${
    pad(date.getMinutes())
  }`
}

/** A `datetime-local` value (local time) as ISO 8601 in UTC; "" stays "". */
export const fromLocalInput = (value: string): string => {
  if (value === "") return ""
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? "" : date.toISOString()
}
