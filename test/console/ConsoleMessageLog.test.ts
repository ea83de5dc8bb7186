import { describe, expect, it } from "@effect/vitest"
import { filtersOf, fromLocalInput, logPath, logQuery, toLocalInput } from "../../console/src/messageLog.js"

/** The message log page's URL and its API query (REFERENCE §12): a listing survives a reload and a link. */

describe("console message log: filters in the URL", () => {
  it("round-trips every filter, repeated statuses and the page's cursor through the URL", () => {
    const path = "/messages?sourceId=web&status=pending&status=dead&destinationId=crm&type=track&event=Signed+Up" +
      "&userId=u1&anonymousId=a1&since=2026-01-01T00%3A00%3A00.000Z&until=2026-01-02T00%3A00%3A00.000Z&limit=2"
    const filters = filtersOf(new URLSearchParams(path.split("?")[1]))
    expect(filters).toStrictEqual({
      sourceId: "web",
      destinationId: "crm",
      statuses: ["pending", "dead"],
      type: "track",
      event: "Signed Up",
      userId: "u1",
      anonymousId: "a1",
      since: "2026-01-01T00:00:00.000Z",
      until: "2026-01-02T00:00:00.000Z",
      limit: "2"
    })
    expect(filtersOf(new URLSearchParams(logPath(filters, "cursor+/=").split("?")[1]))).toStrictEqual(filters)
    expect(new URLSearchParams(logPath(filters, "cursor+/=").split("?")[1]).get("after")).toBe("cursor+/=")
    expect(logQuery(filters, "c1")).toStrictEqual({
      sourceId: "web",
      destinationId: "crm",
      status: ["pending", "dead"],
      type: "track",
      event: "Signed Up",
      userId: "u1",
      anonymousId: "a1",
      since: "2026-01-01T00:00:00.000Z",
      until: "2026-01-02T00:00:00.000Z",
      after: "c1",
      limit: "2"
    })
  })

  it("tells no source chosen (null) from every source (\"\"); empty filters are left out", () => {
    const none = filtersOf(new URLSearchParams(""))
    expect(none.sourceId).toBeNull()
    expect(logPath(none)).toBe("/messages")
    const every = filtersOf(new URLSearchParams("sourceId="))
    expect(every.sourceId).toBe("")
    expect(logPath(every)).toBe("/messages?sourceId=")
    expect(logQuery(every, "")).toStrictEqual({
      sourceId: undefined,
      destinationId: undefined,
      status: undefined,
      type: undefined,
      event: undefined,
      userId: undefined,
      anonymousId: undefined,
      since: undefined,
      until: undefined,
      after: undefined,
      limit: "50"
    })
  })

  it("reads and writes the time inputs in local time, the URL in UTC", () => {
    expect(fromLocalInput("")).toBe("")
    expect(toLocalInput("")).toBe("")
    const iso = fromLocalInput("2026-03-04T05:06")
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/)
    expect(toLocalInput(iso)).toBe("2026-03-04T05:06")
  })
})
