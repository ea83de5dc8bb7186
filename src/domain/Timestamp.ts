import * as Schema from "effect/Schema"

// Date.parse also accepts free-form dates ("March 7, 2020"); REFERENCE §2 asks for ISO 8601 only.
const iso8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/

/**
 * Milliseconds since the epoch for an ISO 8601 date-time, or `undefined` when it is not one. A zone-less time is UTC.
 * The form hookrelay writes (`2026-11-21T09:03:04.120Z`, most of what clients send too) is read without a regular
 * expression or a `Date`, far cheaper (an ingested message's timestamps are read up to nine times); anything
 * else goes through `parseIso8601Generic`, and a property test holds the two to the same answer.
 */
export const parseIso8601 = (value: string): number | undefined => parseCanonical(value) ?? parseIso8601Generic(value)

/** Whether `value` is already in the one form hookrelay writes (`formatTimestamp` gives it back unchanged). */
export const isCanonicalTimestamp = (value: string): boolean => parseCanonical(value) !== undefined

/**
 * `value` itself when it is already in the form hookrelay writes, else its normalization to that form, or
 * `undefined` when it is not an ISO 8601 date-time: `formatTimestamp(parseIso8601(value))` without the round trip.
 */
export const normalizeTimestamp = (value: string): string | undefined => {
  if (isCanonicalTimestamp(value)) return value
  const parsed = parseIso8601Generic(value)
  return parsed === undefined ? undefined : formatTimestamp(parsed)
}

/** The number written in `count` ASCII digits at `start`, or -1 when one of them is not a digit. */
const digitsAt = (value: string, start: number, count: number): number => {
  let result = 0
  for (let i = start; i < start + count; i++) {
    const digit = value.charCodeAt(i) - 48
    if (digit < 0 || digit > 9) return -1
    result = result * 10 + digit
  }
  return result
}

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28)
    : month === 4 || month === 6 || month === 9 || month === 11
    ? 30
    : 31

/**
 * `YYYY-MM-DDTHH:mm:ss.sssZ` with a year from 1000 on and every field in range (hour 24 and leap seconds are left to
 * the generic reader): its epoch milliseconds, the same `Date.parse` gives, and `toISOString` writes it back as is.
 */
const parseCanonical = (value: string): number | undefined => {
  if (
    value.length !== 24 || value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 ||
    value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58 || value.charCodeAt(19) !== 46 ||
    value.charCodeAt(23) !== 90
  ) return undefined
  const year = digitsAt(value, 0, 4)
  const month = digitsAt(value, 5, 2)
  const day = digitsAt(value, 8, 2)
  const hour = digitsAt(value, 11, 2)
  const minute = digitsAt(value, 14, 2)
  const second = digitsAt(value, 17, 2)
  const millis = digitsAt(value, 20, 3)
  if (
    year < 1000 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour < 0 || hour > 23 ||
    minute < 0 || minute > 59 || second < 0 || second > 59 || millis < 0
  ) return undefined
  return Date.UTC(year, month - 1, day, hour, minute, second, millis)
}

/** The general ISO 8601 reader behind `parseIso8601` (offsets, fractions of any length, date only, …). */
export const parseIso8601Generic = (value: string): number | undefined => {
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

/** The last two answers of `formatTimestamp`: a request's receipt time, and the other time last written. */
let recent = { epochMillis: Number.NaN, text: "" }
let older = { epochMillis: Number.NaN, text: "" }

/**
 * ISO 8601 with milliseconds and `Z`, the only format hookrelay writes (REFERENCE §3). The last two answers are kept:
 * every message of a request is stamped with the same receipt time, between times of its own.
 */
export const formatTimestamp = (epochMillis: number): string => {
  if (epochMillis === recent.epochMillis) return recent.text
  if (epochMillis === older.epochMillis) return older.text
  const text = new Date(epochMillis).toISOString()
  older = recent
  recent = { epochMillis, text }
  return text
}

/** A string that parses as an ISO 8601 date-time (kept as given; normalized when delivered). */
export const IsoTimestamp = Schema.String.check(
  Schema.makeFilter((value) => parseIso8601(value) !== undefined || "must be an ISO 8601 date-time")
)
