import { Context, Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { AudienceChunk, AudienceChunkResult, AudienceRef, AudienceSyncStart, IdentifyJobs } from "./Model.js"
import { num } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit, untraced } from "./StoreKit.js"

export interface AudienceMembersShape {
  /**
   * Creates the audience on its first sync and takes its sync lease for `owner` until
   * `leaseUntil`, unless another owner holds an unexpired lease (`Busy`) or another audience of
   * the source is sent as the same property (`PropertyTaken`).
   */
  readonly startAudienceSync: (
    ref: AudienceRef,
    property: string,
    owner: string,
    now: number,
    leaseUntil: number
  ) => Effect.Effect<AudienceSyncStart, StoreError>
  /**
   * Applies one chunk in one transaction: the membership change and the identify job of each
   * member actually added or removed (the write statement itself reports which: concurrent
   * writers cannot both claim one change).
   */
  readonly applyAudienceChunk: (chunk: AudienceChunk) => Effect.Effect<AudienceChunkResult, StoreError>
  /** Which of `userIds` are members (one indexed look-up per id, one statement). */
  readonly audienceMembersAmong: (
    ref: AudienceRef,
    userIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** The members after `after` (exclusive) in the store's order, at most `limit`: keyset paging. */
  readonly audienceMembersPage: (
    ref: AudienceRef,
    after: string | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Gives the lease up (if `owner` still holds it); `completed` also records the sync time. */
  readonly endAudienceSync: (
    ref: AudienceRef,
    owner: string,
    now: number,
    completed: boolean
  ) => Effect.Effect<void, StoreError>
}

/** Audiences (REFERENCE §6): their sync leases, their members, and the identify job of each member added or removed. */
export class AudienceMembers
  extends Context.Service<AudienceMembers, AudienceMembersShape>()("hookrelay/store/AudienceMembers")
{}

/**
 * Inserts the identify jobs of the users a chunk changed, one per user and destination (REFERENCE §6), in the chunk's
 * transaction, as ONE statement whose rows travel as one parameter (a JSON array on SQLite, text[]s on PostgreSQL)
 * with each body as its JSON text, turned into its UTF-8 bytes by the database (`CAST(… AS
 * BLOB)`, `convert_to(…, 'UTF8')`): the same bytes `encodeBody` makes. Multi-row INSERTs of
 * thousands of parameters cost far more garbage and time to compile and bind (`bench/audiences.ts`).
 * With several destinations a user's body is stored once, as ingest stores a message's (`message_bodies`, migration
 * 13): under the id of the user's first job, which each of the user's jobs names.
 */
export const insertIdentifyJobs = (
  { newJobIds, noteLogged, sql }: StoreKit,
  sourceId: string,
  changes: ReadonlyArray<readonly [userId: string, value: unknown]>,
  identify: IdentifyJobs | undefined,
  now: number
) =>
  Effect.gen(function*() {
    const destinations = identify?.destinationIds ?? []
    if (identify === undefined || destinations.length === 0 || changes.length === 0) return 0
    const shared = destinations.length > 1
    const ids = newJobIds(now, changes.length * destinations.length)
    const jobDestinations = new Array<string>(ids.length)
    const messageIds = new Array<string>(ids.length)
    const userIds = new Array<string>(ids.length)
    // Per job: its body (one destination), or the id of its user's body (several).
    const bodies = new Array<string>(ids.length)
    const sharedIds = new Array<string>(shared ? changes.length : 0)
    const sharedBodies = new Array<string>(shared ? changes.length : 0)
    for (let i = 0; i < changes.length; i++) {
      const [userId, value] = changes[i]!
      const job = identify.build(userId, value)
      const first = i * destinations.length
      if (shared) {
        sharedIds[i] = ids[first]!
        sharedBodies[i] = job.bodyText
      }
      destinations.forEach((destinationId, d) => {
        jobDestinations[first + d] = destinationId
        messageIds[first + d] = job.messageId
        userIds[first + d] = userId
        bodies[first + d] = shared ? ids[first]! : job.bodyText
      })
    }
    // The last column is the body, or with several destinations the id of the body stored once.
    const [body, bodyId] = shared
      ? [sql.onDialectOrElse({ pg: () => sql.literal("''::bytea"), orElse: () => sql.literal("X''") }), sql`b`]
      : [sql.onDialectOrElse({ pg: () => sql`convert_to(b, 'UTF8')`, orElse: () => sql`CAST(b AS BLOB)` }), sql`NULL`]
    yield* sql.onDialectOrElse({
      pg: () =>
        sql`
          INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, body_id, status,
            created_at, next_due_at)
          SELECT id, ${sourceId}, did, mid, uid, 'audience', ${body}, ${bodyId}, 'pending', ${now}, ${now}
          FROM unnest(${ids}::text[], ${jobDestinations}::text[], ${messageIds}::text[], ${userIds}::text[],
            ${bodies}::text[]) AS t(id, did, mid, uid, b)`,
      orElse: () =>
        sql`
          INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, body_id, status,
            created_at, next_due_at)
          SELECT id, ${sourceId}, did, mid, uid, 'audience', ${body}, ${bodyId}, 'pending', ${now}, ${now}
          FROM (SELECT value ->> 0 AS id, value ->> 1 AS did, value ->> 2 AS mid, value ->> 3 AS uid, value ->> 4 AS b
            FROM json_each(${
          JSON.stringify(ids.map((id, i) => [id, jobDestinations[i], messageIds[i], userIds[i], bodies[i]]))
        }))`
    })
    if (shared) {
      yield* sql.onDialectOrElse({
        pg: () =>
          sql`
            INSERT INTO message_bodies (id, body)
            SELECT id, convert_to(body, 'UTF8') FROM unnest(${sharedIds}::text[], ${sharedBodies}::text[]) AS t(id, body)`,
        orElse: () =>
          sql`
            INSERT INTO message_bodies (id, body)
            SELECT value ->> 0, CAST(value ->> 1 AS BLOB)
            FROM json_each(${JSON.stringify(sharedIds.map((id, i) => [id, sharedBodies[i]]))})`
      })
    }
    yield* noteLogged
    return ids.length
  })

/**
 * The ids travel as one parameter (a JSON array on SQLite, a text[] on PostgreSQL): the
 * statement text is the same for every chunk and no parameter limit applies. Members already
 * present (most of a later sync's) are left by ON CONFLICT DO NOTHING: on PostgreSQL, filtering
 * them first with NOT EXISTS is planned as a hash anti-join over the whole audience, and is slower.
 */
const addMembers = (sql: SqlClient.SqlClient, ref: AudienceRef, userIds: ReadonlyArray<string>, now: number) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ user_id: string }>`
        INSERT INTO audience_members (source_id, audience, user_id, added_at)
        SELECT ${ref.sourceId}, ${ref.audience}, u, ${now} FROM unnest(${userIds}::text[]) AS u
        ON CONFLICT (source_id, audience, user_id) DO NOTHING
        RETURNING user_id`,
    orElse: () =>
      sql<{ user_id: string }>`
        INSERT INTO audience_members (source_id, audience, user_id, added_at)
        SELECT ${ref.sourceId}, ${ref.audience}, value, ${now} FROM json_each(${JSON.stringify(userIds)}) WHERE true
        ON CONFLICT (source_id, audience, user_id) DO NOTHING
        RETURNING user_id`
  })

const removeMembers = (sql: SqlClient.SqlClient, ref: AudienceRef, userIds: ReadonlyArray<string>) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ user_id: string }>`
        DELETE FROM audience_members
        WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience} AND user_id = ANY(${userIds}::text[])
        RETURNING user_id`,
    orElse: () =>
      sql<{ user_id: string }>`
        DELETE FROM audience_members
        WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience}
          AND user_id IN (SELECT value FROM json_each(${JSON.stringify(userIds)}))
        RETURNING user_id`
  })

export const make = (kit: StoreKit): AudienceMembersShape => {
  const { sql } = kit

  const startAudienceSync = Effect.fn("Store.startAudienceSync")(
    function*(ref: AudienceRef, property: string, owner: string, now: number, leaseUntil: number) {
      return yield* sql.withTransaction(Effect.gen(function*() {
        const taken = yield* sql<{ audience: string }>`
          SELECT audience FROM audiences
          WHERE source_id = ${ref.sourceId} AND property = ${property} AND audience <> ${ref.audience}`
        if (taken.length > 0) {
          return { _tag: "PropertyTaken", audience: taken[0]!.audience } satisfies AudienceSyncStart
        }
        const created = yield* sql<{ audience: string }>`
          INSERT INTO audiences (source_id, audience, property, created_at, synced_at)
          VALUES (${ref.sourceId}, ${ref.audience}, ${property}, ${now}, ${now})
          ON CONFLICT (source_id, audience) DO NOTHING
          RETURNING audience`
        // On PostgreSQL a concurrent starter waits for this row's lock, then sees the new owner.
        const acquired = yield* sql<{ audience: string }>`
          UPDATE audiences SET sync_owner = ${owner}, sync_expires_at = ${leaseUntil}
          WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience}
            AND (sync_owner IS NULL OR sync_expires_at <= ${now})
          RETURNING audience`
        if (acquired.length > 0) return { _tag: "Started", created: created.length > 0 } satisfies AudienceSyncStart
        const held = yield* sql<{ sync_expires_at: unknown }>`
          SELECT sync_expires_at FROM audiences WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience}`
        return { _tag: "Busy", leaseExpiresAt: num(held[0]?.sync_expires_at ?? now) } satisfies AudienceSyncStart
      }))
    },
    fail("startAudienceSync")
  )

  const applyAudienceChunk = Effect.fn("Store.applyAudienceChunk")(
    function*(chunk: AudienceChunk) {
      const { ref } = chunk
      return yield* sql.withTransaction(Effect.gen(function*() {
        // Renewing the lease first also locks the audience row (PostgreSQL) for the chunk.
        const held = yield* sql<{ audience: string }>`
          UPDATE audiences SET sync_expires_at = ${chunk.leaseUntil}
          WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience} AND sync_owner = ${chunk.owner}
          RETURNING audience`
        if (held.length === 0) return { _tag: "LeaseLost" } satisfies AudienceChunkResult
        if (chunk.userIds.length === 0) {
          return { _tag: "Applied", changed: 0, jobsCreated: 0 } satisfies AudienceChunkResult
        }
        const member = chunk.change === "add"
        const changed = member
          ? yield* addMembers(sql, ref, chunk.userIds, chunk.now)
          : yield* removeMembers(sql, ref, chunk.userIds)
        const jobsCreated = yield* insertIdentifyJobs(
          kit,
          ref.sourceId,
          changed.map((row) => [row.user_id, member] as const),
          chunk.identify,
          chunk.now
        )
        return { _tag: "Applied", changed: changed.length, jobsCreated } satisfies AudienceChunkResult
      }))
    },
    untraced,
    fail("applyAudienceChunk")
  )

  const audienceMembersPage = Effect.fn("Store.audienceMembersPage")(
    function*(ref: AudienceRef, after: string | undefined, limit: number) {
      const from = after === undefined ? sql.literal("") : sql` AND user_id > ${after}`
      const rows = yield* sql<{ user_id: string }>`
        SELECT user_id FROM audience_members
        WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience}${from}
        ORDER BY user_id LIMIT ${Math.max(1, Math.floor(limit))}`
      return rows.map((row) => row.user_id)
    },
    untraced,
    fail("audienceMembersPage")
  )

  const audienceMembersAmong = Effect.fn("Store.audienceMembersAmong")(
    function*(ref: AudienceRef, userIds: ReadonlyArray<string>) {
      if (userIds.length === 0) return []
      const rows = yield* sql.onDialectOrElse({
        pg: () =>
          sql<{ user_id: string }>`
            SELECT user_id FROM audience_members
            WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience} AND user_id = ANY(${userIds}::text[])`,
        orElse: () =>
          sql<{ user_id: string }>`
            SELECT user_id FROM audience_members
            WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience}
              AND user_id IN (SELECT value FROM json_each(${JSON.stringify(userIds)}))`
      })
      return rows.map((row) => row.user_id)
    },
    untraced,
    fail("audienceMembersAmong")
  )

  const endAudienceSync = Effect.fn("Store.endAudienceSync")(
    function*(ref: AudienceRef, owner: string, now: number, completed: boolean) {
      const synced = completed ? sql`, synced_at = ${now}` : sql.literal("")
      yield* sql`
        UPDATE audiences SET sync_owner = NULL, sync_expires_at = NULL${synced}
        WHERE source_id = ${ref.sourceId} AND audience = ${ref.audience} AND sync_owner = ${owner}`
    },
    fail("endAudienceSync")
  )

  return { startAudienceSync, applyAudienceChunk, audienceMembersPage, audienceMembersAmong, endAudienceSync }
}
