import { Schema } from "effect"

// Date.parse also accepts free-form dates ("March 7, 2020"); SPEC §2 asks for ISO 8601 only.
const iso8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/

/** Milliseconds since the epoch for an ISO 8601 date-time, or `undefined` when it is not one. A zone-less time is UTC. */
export const parseIso8601 = (value: string): number | undefined => {
  const match = iso8601.exec(value.trim())
  if (match === null) return undefined
  const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = "", zone] = match
  if (!isCalendarDate(Number(year), Number(month), Number(day))) return undefined
  const millis = fraction.padEnd(3, "0").slice(0, 3)
  const offset = zone === undefined || zone === "Z" || zone === "z" ? "Z" : normalizeOffset(zone)
  const parsed = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${offset}`)
  return Number.isNaN(parsed) ? undefined : parsed
}

// Date.parse rolls 2026-02-30 over to March 2 instead of refusing it.
const isCalendarDate = (year: number, month: number, day: number): boolean => {
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

const normalizeOffset = (zone: string): string => {
  const digits = zone.slice(1).replace(":", "")
  const hours = digits.slice(0, 2)
  const minutes = digits.slice(2, 4).padEnd(2, "0")
  return `${zone[0]}${hours}:${minutes}`
}

/** ISO 8601 with milliseconds and `Z`, the only format hookrelay writes (SPEC §3). */
export const formatTimestamp = (epochMillis: number): string => new Date(epochMillis).toISOString()

/** A string that parses as an ISO 8601 date-time (kept as given; normalized when delivered). */
export const IsoTimestamp = Schema.String.pipe(
  Schema.filter((value) => parseIso8601(value) !== undefined || "must be an ISO 8601 date-time")
)
