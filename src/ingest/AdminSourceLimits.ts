import { Effect } from "effect"
import { AdminCaller, seesSource } from "./AdminScopes.js"
import { errorResponse } from "./ErrorBody.js"

/**
 * A key limited to sources (REFERENCE §7c) inside the handlers: what the bearer middleware cannot see from the path and
 * query. Lists keep the caller's sources only; anything of another source is `404`, as if it did not exist.
 */

/** The caller's sources; `null`: every source. */
export const callerSources = Effect.map(AdminCaller, (caller) => caller.sourceIds)

/** Whether the caller may see this source. */
export const sees = (sourceId: string) => Effect.map(AdminCaller, (caller) => seesSource(caller, sourceId))

export const noSuchSource = errorResponse(404, "not_found", "no such source")

/**
 * A list over every source, for a caller limited to some: one query per source, merged newest first and cut to
 * `limit`; `query(undefined)` once for every other caller.
 */
export const perSource = <A, E, R>(
  query: (sourceId: string | undefined) => Effect.Effect<ReadonlyArray<A>, E, R>,
  newest: (item: A) => number,
  limit: number
) =>
  Effect.flatMap(callerSources, (sourceIds) =>
    sourceIds === null
      ? query(undefined)
      : Effect.map(
        Effect.forEach(sourceIds, (sourceId) => query(sourceId)),
        (lists) => lists.flat().sort((a, b) => newest(b) - newest(a)).slice(0, limit)
      ))
