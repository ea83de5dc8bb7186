import { Array as Arr, Effect, Option } from "effect"
import type { Backlog, BacklogOptions, Completion, NewJob, StoreShape } from "./Model.js"
import { idChunk, num, numOrNull } from "./Rows.js"
import { fail, type HotPaths, insertJobRows, type StoreKit, typeOfKind, untraced } from "./StoreKit.js"

/**
 * The outbox: jobs in (ingest's enqueue, the product's own jobs), claimed under leases, completed. Ingest, claims and
 * completions are the backend's hot paths (`HotPaths`); the rest is the same SQL on both databases.
 */

type OutboxOperations = Pick<
  StoreShape,
  | "enqueue"
  | "insertJobs"
  | "claimDue"
  | "renewLeases"
  | "releaseLeases"
  | "recoverAbandonedLeases"
  | "markFirstAttempt"
  | "markDelivered"
  | "reschedule"
  | "markDead"
  | "completeMany"
  | "nextWakeAt"
  | "backlog"
>

const backlogStatuses = ["pending", "delivering", "delivered", "dead"] as const

export const make = (kit: StoreKit, hot: HotPaths): OutboxOperations => {
  const { noteLogged, newJobIds, reads, sql } = kit

  const insertJobs = Effect.fn("Store.insertJobs")(
    function*(jobs: ReadonlyArray<NewJob>, now: number) {
      const ids = newJobIds(now, jobs.length)
      yield* sql.withTransaction(insertJobRows(
        sql,
        jobs.map((job, i) => ({
          id: ids[i]!,
          source_id: job.sourceId,
          message_id: job.messageId,
          user_id: job.userId ?? null,
          kind: job.kind,
          body: job.body,
          status: "pending",
          created_at: now,
          next_due_at: now,
          message_type: typeOfKind(job.kind),
          event: null
        }))
      ))
      yield* noteLogged
      return ids
    },
    untraced,
    fail("insertJobs")
  )

  const renewLeases = Effect.fn("Store.renewLeases")(
    function*(owner: string, jobIds: ReadonlyArray<string>, until: number) {
      const held: Array<string> = []
      for (const chunk of Arr.chunksOf(jobIds, idChunk)) {
        const rows = yield* sql<{ id: string }>`
          UPDATE jobs SET lease_expires_at = ${until}
          WHERE status = 'delivering' AND lease_owner = ${owner} AND ${sql.in("id", chunk)}
          RETURNING id`
        for (const row of rows) held.push(row.id)
      }
      return held
    },
    untraced,
    fail("renewLeases")
  )

  const releaseLeases = Effect.fn("Store.releaseLeases")(
    function*(owner: string, jobIds?: ReadonlyArray<string>) {
      const release = (only: ReadonlyArray<string> | undefined) =>
        sql<{ id: string }>`
          UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
          WHERE status = 'delivering' AND lease_owner = ${owner}${
          only === undefined ? sql.literal("") : sql` AND ${sql.in("id", only)}`
        }
          RETURNING id`
      if (jobIds === undefined) return (yield* release(undefined)).length
      let released = 0
      for (const chunk of Arr.chunksOf(jobIds, idChunk)) released += (yield* release(chunk)).length
      return released
    },
    untraced,
    fail("releaseLeases")
  )

  const markFirstAttempt = Effect.fn("Store.markFirstAttempt")(
    function*(jobId: string, at: number) {
      const rows = yield* sql<{ id: string }>`
        UPDATE jobs SET first_attempt_at = ${at}
        WHERE id = ${jobId} AND first_attempt_at IS NULL
        RETURNING id`
      return rows.length > 0
    },
    untraced,
    fail("markFirstAttempt")
  )

  const completeOne = (owner: string, completion: Completion) =>
    Effect.map(hot.completeMany(owner, [completion]), (result) => result.applied.length === 1)

  const nextWakeAt = Effect.fn("Store.nextWakeAt")(
    function*() {
      const rows = yield* sql<{ due: unknown; lease: unknown }>`
        SELECT
          (SELECT min(next_due_at) FROM jobs WHERE status = 'pending') AS due,
          (SELECT min(lease_expires_at) FROM jobs WHERE status = 'delivering') AS lease`
      const due = numOrNull(rows[0]?.due)
      const lease = numOrNull(rows[0]?.lease)
      if (due === null) return Option.fromNullishOr(lease)
      return Option.some(lease === null ? due : Math.min(due, lease))
    },
    fail("nextWakeAt")
  )

  const backlog = Effect.fn("Store.backlog")(
    function*(options: BacklogOptions | undefined) {
      // One scalar subquery per status asked for, each answered from its partial index; fixed text, no input.
      const counted = backlogStatuses.filter((status) =>
        (status !== "delivered" || options?.delivered !== false) && (status !== "dead" || options?.dead !== false)
      )
      const rows = yield* reads.unsafe<Record<string, unknown>>(
        `SELECT ${
          counted.map((status) => `(SELECT count(*) FROM jobs WHERE status = '${status}') AS ${status}`).join(", ")
        }`
      )
      const row = rows[0] ?? {}
      const result: Backlog = {
        pending: num(row.pending ?? 0),
        delivering: num(row.delivering ?? 0),
        delivered: num(row.delivered ?? 0),
        dead: num(row.dead ?? 0)
      }
      return result
    },
    fail("backlog")
  )

  return {
    enqueue: hot.enqueue,
    insertJobs,
    claimDue: hot.claimDue,
    renewLeases,
    releaseLeases,
    recoverAbandonedLeases: hot.recoverAbandonedLeases,
    markFirstAttempt,
    markDelivered: (owner, jobId, now) => completeOne(owner, { _tag: "Delivered", jobId, at: now }),
    reschedule: (owner, jobId, nextDueAt, firstAttemptAt, endpointState, lastError) =>
      completeOne(owner, { _tag: "Retry", jobId, nextDueAt, firstAttemptAt, endpointState, lastError }),
    markDead: (owner, jobId, now, lastError) => completeOne(owner, { _tag: "Dead", jobId, at: now, lastError }),
    completeMany: hot.completeMany,
    nextWakeAt: () => nextWakeAt(),
    backlog: (options) => backlog(options)
  }
}
