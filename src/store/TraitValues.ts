import { Context, Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { insertIdentifyJobs } from "./AudienceMembers.js"
import type { TraitChunk, TraitChunkResult } from "./Model.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit, untraced } from "./StoreKit.js"

export interface TraitValuesShape {
  /**
   * Stores one chunk of trait values in one transaction and inserts an identify job for each user
   * whose value was new or different (the upsert itself reports which), or was cleared by `null`.
   */
  readonly applyTraitChunk: (chunk: TraitChunk) => Effect.Effect<TraitChunkResult, StoreError>
}

/** Computed traits (REFERENCE §6): each user's value per trait, and an identify job for each value changed or cleared. */
export class TraitValues extends Context.Service<TraitValues, TraitValuesShape>()("hookrelay/store/TraitValues") {}

/** Stores new or different values; returns the users whose row was inserted or updated. */
const upsertTraitValues = (
  sql: SqlClient.SqlClient,
  sourceId: string,
  trait: string,
  values: ReadonlyArray<readonly [string, string]>,
  now: number
) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ user_id: string; value: string }>`
        INSERT INTO computed_traits (source_id, user_id, trait, value, updated_at)
        SELECT ${sourceId}, u, ${trait}, v, ${now}
        FROM unnest(${values.map(([userId]) => userId)}::text[], ${values.map(([, value]) => value)}::text[]) AS t(u, v)
        ON CONFLICT (source_id, user_id, trait) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
        WHERE computed_traits.value <> excluded.value
        RETURNING user_id, value`,
    orElse: () =>
      sql<{ user_id: string; value: string }>`
        INSERT INTO computed_traits (source_id, user_id, trait, value, updated_at)
        SELECT ${sourceId}, value ->> 0, ${trait}, value ->> 1, ${now} FROM json_each(${
        JSON.stringify(values)
      }) WHERE true
        ON CONFLICT (source_id, user_id, trait) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
        WHERE computed_traits.value <> excluded.value
        RETURNING user_id, value`
  })

const clearTraitValues = (sql: SqlClient.SqlClient, sourceId: string, trait: string, userIds: ReadonlyArray<string>) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ user_id: string }>`
        DELETE FROM computed_traits
        WHERE source_id = ${sourceId} AND trait = ${trait} AND user_id = ANY(${userIds}::text[])
        RETURNING user_id`,
    orElse: () =>
      sql<{ user_id: string }>`
        DELETE FROM computed_traits
        WHERE source_id = ${sourceId} AND trait = ${trait}
          AND user_id IN (SELECT value FROM json_each(${JSON.stringify(userIds)}))
        RETURNING user_id`
  })

export const make = (kit: StoreKit): TraitValuesShape => {
  const { sql } = kit

  const applyTraitChunk = Effect.fn("Store.applyTraitChunk")(
    function*(chunk: TraitChunk) {
      const set: Array<readonly [string, string]> = []
      const clear: Array<string> = []
      for (const [userId, value] of chunk.values) {
        if (value === null) clear.push(userId)
        else set.push([userId, value])
      }
      return yield* sql.withTransaction(Effect.gen(function*() {
        const changed = set.length === 0
          ? []
          : yield* upsertTraitValues(sql, chunk.sourceId, chunk.trait, set, chunk.now)
        const cleared = clear.length === 0 ? [] : yield* clearTraitValues(sql, chunk.sourceId, chunk.trait, clear)
        const jobsCreated = yield* insertIdentifyJobs(
          kit,
          chunk.sourceId,
          [
            ...changed.map((row) => [row.user_id, JSON.parse(row.value) as unknown] as const),
            ...cleared.map((row) => [row.user_id, null] as const)
          ],
          chunk.identify,
          chunk.now
        )
        const result: TraitChunkResult = { changed: changed.length, cleared: cleared.length, jobsCreated }
        return result
      }))
    },
    untraced,
    fail("applyTraitChunk")
  )

  return { applyTraitChunk }
}
