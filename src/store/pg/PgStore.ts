import { Context, Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { migrate } from "../Migrations.js"
import { purgeChunk } from "../Purge.js"
import { makeJobIds } from "../Rows.js"
import { SecretBox } from "../SecretBox.js"
import { sealAtOpen, Sources } from "../Sources.js"
import type { StoreError } from "../StoreError.js"
import { fail, inChunks, type StoreKit } from "../StoreKit.js"
import { assemble, type StoreServices } from "../StoreOperations.js"
import { makeClaim } from "./PgClaim.js"
import { makeComplete } from "./PgComplete.js"
import { makeEnqueue } from "./PgEnqueue.js"

/**
 * Deletes finished jobs in chunks, each chunk its own short transaction, so that a large purge never holds locks
 * ingest and the dispatchers wait for for long.
 */
const makePurgeJobs =
  (sql: SqlClient.SqlClient) => (status: "delivered" | "dead", olderThan: number, sourceId: string | undefined) =>
    inChunks(purgeChunk, (limit) =>
      sql.withTransaction(Effect.gen(function*() {
        const conditions = [sql`status = ${status}`, sql`finished_at < ${olderThan}`]
        if (sourceId !== undefined) conditions.push(sql`source_id = ${sourceId}`)
        const ids = (yield* sql<{ id: string }>`
        SELECT id FROM jobs WHERE ${sql.and(conditions)} ORDER BY finished_at LIMIT ${limit}`)
          .map((row) => row.id)
        if (ids.length === 0) return 0
        yield* sql`DELETE FROM attempts WHERE ${sql.in("job_id", ids)}`
        yield* sql`DELETE FROM jobs WHERE ${sql.in("id", ids)}`
        return ids.length
      })))

/**
 * The store on PostgreSQL (the `SqlClient` in context, a `PgClient`): runs the migrations, and returns the operations
 * with PostgreSQL's hot paths. Several processes may share the database: their leases expire on their own, so none is
 * taken back at start.
 */
export const make: Effect.Effect<Context.Context<StoreServices>, StoreError, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* migrate.pipe(fail("migrate"))
    const kit: StoreKit = { sql, reads: sql, newJobIds: makeJobIds(), noteLogged: Effect.void }
    const services = assemble(kit, (writes) => ({
      enqueue: makeEnqueue(kit, writes.usage),
      claimDue: makeClaim(kit),
      completeMany: makeComplete(kit, writes.attempts, writes.usage),
      purgeJobs: makePurgeJobs(sql),
      beforePurgeSeen: Effect.void,
      recoverAbandonedLeases: () => Effect.succeed(0)
    }), yield* SecretBox)
    yield* sealAtOpen(Context.get(services, Sources))
    return services
  }
)
