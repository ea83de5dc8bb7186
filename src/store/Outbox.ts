import { Array as Arr, Context, Effect, Option } from "effect"
import { webhooksDestinationId } from "../domain/WebhooksDestination.js"
import type {
  AttemptRecord,
  Backlog,
  BacklogOptions,
  ClaimedJob,
  ClaimOptions,
  CompleteResult,
  Completion,
  EnqueueEntry,
  EnqueueOptions,
  EnqueueResult,
  NewJob
} from "./Model.js"
import { idChunk, num, numOrNull } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type HotPaths, insertJobRows, type StoreKit, typeOfKind, untraced } from "./StoreKit.js"

export interface OutboxShape {
  /**
   * One transaction per ingest request: dedupe each entry against the last 24 h (and earlier
   * entries of the same request), mark the rest seen, insert a pending job (due `now`) for each
   * entry with a body, and count usage.
   */
  readonly enqueue: (
    sourceId: string,
    entries: ReadonlyArray<EnqueueEntry>,
    now: number,
    options?: EnqueueOptions
  ) => Effect.Effect<EnqueueResult, StoreError>
  /** Inserts pending jobs without deduplication; returns their ids in order. */
  readonly insertJobs: (jobs: ReadonlyArray<NewJob>, now: number) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /**
   * Takes up to `limit` jobs that are pending and due, or delivering with an expired lease, marks
   * them delivering under `owner` until `now + leaseMs`, and returns them ordered by due time.
   * `owner` must be unique per process (start).
   */
  readonly claimDue: (
    owner: string,
    now: number,
    limit: number,
    leaseMs: number,
    options?: ClaimOptions
  ) => Effect.Effect<ReadonlyArray<ClaimedJob>, StoreError>
  /** Extends the leases `owner` still holds; returns the ids it still holds. */
  readonly renewLeases: (
    owner: string,
    jobIds: ReadonlyArray<string>,
    until: number
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /** Graceful shutdown: every job leased by `owner` (or only `jobIds`) back to pending, window kept. */
  readonly releaseLeases: (owner: string, jobIds?: ReadonlyArray<string>) => Effect.Effect<number, StoreError>
  /**
   * At a dispatcher's start on a store one process owns (SQLite): every job still marked delivering was
   * leased by a process that died, so it goes back to pending now instead of after its lease. A no-op on
   * PostgreSQL, where other live processes hold leases. Returns the jobs taken back.
   */
  readonly recoverAbandonedLeases: () => Effect.Effect<number, StoreError>
  readonly markDelivered: (owner: string, jobId: string, now: number) => Effect.Effect<boolean, StoreError>
  readonly reschedule: (
    owner: string,
    jobId: string,
    nextDueAt: number,
    firstAttemptAt: number,
    endpointState: unknown,
    lastError: string | null
  ) => Effect.Effect<boolean, StoreError>
  readonly markDead: (
    owner: string,
    jobId: string,
    now: number,
    lastError: string | null
  ) => Effect.Effect<boolean, StoreError>
  /**
   * The batched form: records `attempts` and applies `completions` in one transaction, each
   * completion only if `owner` still holds that job's lease. Counts delivered/dead usage.
   */
  readonly completeMany: (
    owner: string,
    completions: ReadonlyArray<Completion>,
    attempts?: ReadonlyArray<AttemptRecord>
  ) => Effect.Effect<CompleteResult, StoreError>
  /** The earliest time a claim could find work (a pending job due, or a lease expiring). */
  readonly nextWakeAt: () => Effect.Effect<Option.Option<number>, StoreError>
  /**
   * Jobs by status. `{ delivered: false, dead: false }` counts only pending and delivering jobs (the others
   * answer 0): those two counts come from small indexes, while the delivered jobs' index holds every job kept
   * for the retention period (on SQLite, counted on the connection every commit waits for).
   */
  readonly backlog: (options?: BacklogOptions) => Effect.Effect<Backlog, StoreError>
}

/**
 * The outbox: jobs in (ingest's enqueue, the product's own jobs), claimed under leases, completed. Ingest, claims and
 * completions are the backend's hot paths (`HotPaths`); the rest is the same SQL on both databases.
 */
export class Outbox extends Context.Service<Outbox, OutboxShape>()("hookrelay/store/Outbox") {}

const backlogStatuses = ["pending", "delivering", "delivered", "dead"] as const

export const make = (kit: StoreKit, hot: HotPaths): OutboxShape => {
  const { noteLogged, newJobIds, reads, sql } = kit

  const insertJobs = Effect.fn("Store.insertJobs")(
    function*(jobs: ReadonlyArray<NewJob>, now: number) {
      const ids = newJobIds(now, jobs.length)
      yield* sql.withTransaction(insertJobRows(
        sql,
        jobs.map((job, i) => ({
          id: ids[i]!,
          source_id: job.sourceId,
          destination_id: job.destinationId ?? webhooksDestinationId,
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
      // Pending counts the jobs a pending row carries, not made yet (migration 21), from `jobs_due` as well.
      const count = (status: string) =>
        status === "pending"
          ? `(SELECT count(*) + coalesce(sum(fan_out_count), 0) FROM jobs WHERE status = 'pending') AS pending`
          : `(SELECT count(*) FROM jobs WHERE status = '${status}') AS ${status}`
      const rows = yield* reads.unsafe<Record<string, unknown>>(`SELECT ${counted.map(count).join(", ")}`)
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
    markDelivered: (owner, jobId, now) => completeOne(owner, { _tag: "Delivered", jobId, at: now }),
    reschedule: (owner, jobId, nextDueAt, firstAttemptAt, endpointState, lastError) =>
      completeOne(owner, { _tag: "Retry", jobId, nextDueAt, firstAttemptAt, endpointState, lastError }),
    markDead: (owner, jobId, now, lastError) => completeOne(owner, { _tag: "Dead", jobId, at: now, lastError }),
    completeMany: hot.completeMany,
    nextWakeAt: () => nextWakeAt(),
    backlog: (options) => backlog(options)
  }
}
