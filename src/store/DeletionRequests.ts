import { Array as Arr, Context, Effect, Option } from "effect"
import { summaryColumns, type SummaryRow, toSummary } from "./JobSummaries.js"
import type { DeletionRecorded, NewDeletion, StoredDeletion } from "./Model.js"
import { num } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, insertChunk, insertJobRows, type StoreKit } from "./StoreKit.js"

export interface DeletionRequestsShape {
  /**
   * One transaction: removes the user's jobs that are not delivered yet — `pending` and `dead`,
   * with their attempts; never `delivering` ones, which a dispatcher holds and is sending right
   * now, nor earlier delete notifications — together with the user's audience memberships and
   * computed traits in those sources (what the receiver was told is now forgotten there, so a
   * later sync sends it again), and the message log's rows of the user (`user_id` or `anonymous_id`); inserts the
   * delete notification jobs; records the request.
   */
  readonly recordDeletion: (deletion: NewDeletion, now: number) => Effect.Effect<DeletionRecorded, StoreError>
  readonly getDeletion: (id: string) => Effect.Effect<Option.Option<StoredDeletion>, StoreError>
}

/** Deletion requests (REFERENCE §5): a user's undelivered jobs, memberships and traits removed, the receivers told. */
export class DeletionRequests
  extends Context.Service<DeletionRequests, DeletionRequestsShape>()("hookrelay/store/DeletionRequests")
{}

/** Jobs of one user removed per statement by a deletion request (all in the request's transaction). */
const deletionChunk = 1000

export const make = ({ newJobIds, noteLogged, sql }: StoreKit): DeletionRequestsShape => {
  const summary = sql.literal(summaryColumns)

  const recordDeletion = Effect.fn("Store.recordDeletion")(
    function*(deletion: NewDeletion, now: number) {
      const userId = deletion.userId
      const sources = deletion.sourceIds
      return yield* sql.withTransaction(Effect.gen(function*() {
        // The user's undelivered jobs, a chunk at a time (a heavy user may have a large backlog): the
        // pending ones, then the dead ones, each read through its status's partial index (`jobs_pending_source`
        // or `jobs_due`, `jobs_dead`; the status is written out, not bound, so that the planner may use it).
        // There is no index by user (migration 8): a deletion reads the sources' backlog and dead
        // letters, not the delivered history. The status is checked again by the DELETE itself: on
        // PostgreSQL a dispatcher may claim a job between the subquery's snapshot and the delete, and a
        // claimed job is left alone.
        let jobsRemoved = 0
        if (deletion.everySource || sources.length > 0) {
          const ofSources = deletion.everySource ? sql.literal("") : sql` AND ${sql.in("source_id", sources)}`
          for (const status of [sql.literal("'pending'"), sql.literal("'dead'")]) {
            while (true) {
              const removed = yield* sql<{ id: string }>`
                DELETE FROM jobs WHERE id IN (
                  SELECT id FROM jobs
                  WHERE status = ${status}${ofSources} AND user_id = ${userId} AND kind <> 'delete'
                  LIMIT ${deletionChunk})
                AND status = ${status}
                RETURNING id`
              if (removed.length > 0) {
                yield* sql`DELETE FROM attempts WHERE ${sql.in("job_id", removed.map((row) => row.id))}`
              }
              jobsRemoved += removed.length
              if (removed.length < deletionChunk) break
            }
          }
        }
        if (deletion.everySource || sources.length > 0) {
          // The message log carries the user's ids (REFERENCE §12): its rows of the user go, whatever their state.
          // No index by user: the sources' rows are read through (a rare request, not a hot path).
          const ofSources = deletion.everySource ? sql`` : sql` AND ${sql.in("source_id", sources)}`
          yield* sql`DELETE FROM message_log WHERE (user_id = ${userId} OR anonymous_id = ${userId})${ofSources}`
        }
        if (sources.length > 0) {
          // Both answered from the primary keys: (source_id, audience, user_id) and (source_id, user_id, trait).
          yield* sql`
            DELETE FROM audience_members
            WHERE user_id = ${userId} AND (source_id, audience) IN (
              SELECT source_id, audience FROM audiences WHERE ${sql.in("source_id", sources)})`
          yield* sql`DELETE FROM computed_traits WHERE user_id = ${userId} AND ${sql.in("source_id", sources)}`
        }
        const jobIds = newJobIds(now, deletion.notifications.length)
        yield* insertJobRows(
          sql,
          deletion.notifications.map((notification, i) => ({
            id: jobIds[i]!,
            source_id: notification.sourceId,
            destination_id: notification.destinationId,
            message_id: notification.messageId,
            user_id: userId,
            kind: "delete",
            body: notification.body,
            status: "pending",
            created_at: now,
            next_due_at: now,
            message_type: "delete",
            event: null
          }))
        )
        yield* noteLogged
        yield* sql`
          INSERT INTO deletion_requests (id, user_id, source_ids, created_at, jobs_removed)
          VALUES (${deletion.id}, ${userId}, ${JSON.stringify(sources)}, ${now}, ${jobsRemoved})`
        const notifications = deletion.notifications.map((notification, i) => ({
          sourceId: notification.sourceId,
          destinationId: notification.destinationId,
          jobId: jobIds[i]!
        }))
        for (const chunk of Arr.chunksOf(notifications, insertChunk)) {
          yield* sql`INSERT INTO deletion_notifications ${
            sql.insert(Arr.map(chunk, (n) => ({
              deletion_id: deletion.id,
              source_id: n.sourceId,
              destination_id: n.destinationId,
              job_id: n.jobId
            })))
          }`
        }
        const result: DeletionRecorded = { jobsRemoved, notifications }
        return result
      }))
    },
    fail("recordDeletion")
  )

  const getDeletion = Effect.fn("Store.getDeletion")(
    function*(id: string) {
      const requests = yield* sql<{
        id: string
        user_id: string
        source_ids: string
        created_at: unknown
        jobs_removed: unknown
      }>`SELECT id, user_id, source_ids, created_at, jobs_removed FROM deletion_requests WHERE id = ${id}`
      const request = requests[0]
      if (request === undefined) return Option.none<StoredDeletion>()
      const notifications = yield* sql<{ source_id: string; destination_id: string; job_id: string }>`
        SELECT source_id, destination_id, job_id FROM deletion_notifications WHERE deletion_id = ${id}
        ORDER BY source_id, job_id`
      const jobs = notifications.length === 0 ? [] : yield* sql<SummaryRow>`
        SELECT ${summary} FROM jobs WHERE ${sql.in("id", notifications.map((n) => n.job_id))}`
      const byId = new Map(jobs.map((row) => [row.id, toSummary(row)]))
      const deletion: StoredDeletion = {
        id: request.id,
        userId: request.user_id,
        sourceIds: JSON.parse(request.source_ids) as ReadonlyArray<string>,
        createdAt: num(request.created_at),
        jobsRemoved: num(request.jobs_removed),
        notifications: notifications.map((n) => ({
          sourceId: n.source_id,
          destinationId: n.destination_id,
          jobId: n.job_id,
          job: Option.fromNullishOr(byId.get(n.job_id))
        }))
      }
      return Option.some(deletion)
    },
    fail("getDeletion")
  )

  return { recordDeletion, getDeletion }
}
