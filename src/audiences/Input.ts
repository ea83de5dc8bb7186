import { Result } from "effect"
import type { FieldIssue } from "../domain/Issues.js"
import { audiencePropertyName } from "./PropertyName.js"

/**
 * Validation of the inputs of deletion requests and syncs, shared by the library entry points and
 * the admin API (which passes the decoded JSON through). Hand-written rather than a Schema: a
 * membership of a million ids is checked in one pass, and a bad input reports its first few
 * offending elements instead of a million issues.
 */

/** The largest membership one sync accepts (and the most values one computed-trait sync accepts). */
export const maxSyncSize = 1_000_000
/** Longest user id, audience name or trait name accepted. */
export const maxIdLength = 1_000
export const maxNameLength = 200
/** At most this many element issues are reported for one list. */
const maxIssues = 10

const issue = (path: string, message: string): FieldIssue => ({ path, message })

/** A non-empty string of at most `maxIdLength` characters, or why not. */
const idProblem = (value: unknown): string | undefined => {
  if (typeof value !== "string") return "must be a non-empty string"
  if (value.length === 0) return "must be a non-empty string"
  if (value.length > maxIdLength) return `must be at most ${maxIdLength} characters`
  return undefined
}

/** A user id: a non-empty string, or a number that becomes its string (as in REFERENCE §2). */
export const validateUserId = (value: unknown, path = "userId"): Result.Result<string, ReadonlyArray<FieldIssue>> => {
  if (typeof value === "number" && Number.isFinite(value)) return Result.succeed(String(value))
  const problem = idProblem(value)
  return problem === undefined ? Result.succeed(value as string) : Result.fail([issue(path, problem)])
}

/**
 * A list of ids (user ids of a membership, source ids of a deletion): an array of non-empty
 * strings, at most `max` long. Duplicates are collapsed, first occurrence first — unless
 * `dedupe: false` (the caller collapses them its own way): then the input array itself comes back.
 */
export const validateIdList = (
  value: unknown,
  path: string,
  options: { readonly max: number; readonly nonEmpty?: boolean; readonly dedupe?: boolean }
): Result.Result<ReadonlyArray<string>, ReadonlyArray<FieldIssue>> => {
  if (!Array.isArray(value)) return Result.fail([issue(path, "must be an array of non-empty strings")])
  if (value.length > options.max) {
    return Result.fail([issue(path, `must hold at most ${options.max} ids; it holds ${value.length}`)])
  }
  if (options.nonEmpty === true && value.length === 0) return Result.fail([issue(path, "must not be empty")])
  const issues: Array<FieldIssue> = []
  for (let i = 0; i < value.length && issues.length < maxIssues; i++) {
    const problem = idProblem(value[i])
    if (problem !== undefined) issues.push(issue(`${path}[${i}]`, problem))
  }
  if (issues.length > 0) return Result.fail(issues)
  const ids = value as ReadonlyArray<string>
  return Result.succeed(options.dedupe === false ? ids : Array.from(new Set(ids)))
}

/** A sorted copy of `ids` without duplicates (one sort, no set). */
export const sortedUnique = (ids: ReadonlyArray<string>): Array<string> => {
  const sorted = Array.from(ids).sort()
  let kept = 0
  for (let i = 0; i < sorted.length; i++) {
    if (i === 0 || sorted[i] !== sorted[kept - 1]) sorted[kept++] = sorted[i]!
  }
  sorted.length = kept
  return sorted
}

/** An audience or trait name and the snake_case property it is sent as (REFERENCE §6). */
export const validateName = (
  value: unknown,
  path: string
): Result.Result<{ readonly name: string; readonly property: string }, ReadonlyArray<FieldIssue>> => {
  if (typeof value !== "string" || value.trim().length === 0) {
    return Result.fail([issue(path, "must be a non-empty string")])
  }
  if (value.length > maxNameLength) return Result.fail([issue(path, `must be at most ${maxNameLength} characters`)])
  const property = audiencePropertyName(value)
  if (property.length === 0) return Result.fail([issue(path, "must contain a letter or a digit")])
  return Result.succeed({ name: value, property })
}

/** A computed trait's value: a JSON scalar. `null` clears the user's value. */
export type TraitValue = string | number | boolean | null

/**
 * The `values` of a computed-trait sync: an object of user id → JSON scalar, at most
 * `maxSyncSize` users. Returned as entries with each value's JSON text (`null` kept as `null`).
 */
export const validateTraitValues = (
  value: unknown,
  path: string
): Result.Result<ReadonlyArray<readonly [string, string | null]>, ReadonlyArray<FieldIssue>> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Result.fail([issue(path, "must be an object of user id → string, number, boolean or null")])
  }
  const entries = Object.entries(value as Record<string, unknown>)
  if (entries.length > maxSyncSize) {
    return Result.fail([issue(path, `must hold at most ${maxSyncSize} users; it holds ${entries.length}`)])
  }
  const issues: Array<FieldIssue> = []
  const result = new Array<readonly [string, string | null]>(entries.length)
  for (let i = 0; i < entries.length; i++) {
    const [userId, raw] = entries[i]!
    const problem = userId.length === 0
      ? "user ids must be non-empty"
      : userId.length > maxIdLength
      ? `user ids must be at most ${maxIdLength} characters`
      : raw === null || typeof raw === "string" || typeof raw === "boolean" ||
          (typeof raw === "number" && Number.isFinite(raw))
      ? undefined
      : "must be a string, a finite number, a boolean or null"
    if (problem !== undefined) {
      if (issues.length < maxIssues) issues.push(issue(`${path}.${userId}`, problem))
      continue
    }
    result[i] = [userId, raw === null ? null : JSON.stringify(raw)]
  }
  return issues.length > 0 ? Result.fail(issues) : Result.succeed(result)
}
