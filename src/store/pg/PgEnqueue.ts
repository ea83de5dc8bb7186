import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Effect } from "effect"
import { carriedDestinations, jobIdsOf } from "../CarriedJobs.js"
import type { EnqueueEntry, EnqueueOptions, EnqueueResult } from "../Model.js"
import { dedupeWindowMs } from "../Model.js"
import { destinationsOf, firstOfEachMessageId, utcDay } from "../Rows.js"
import { fail, type StoreKit, untraced } from "../StoreKit.js"
import type { UsageWriter } from "../Usage.js"
import { usageOnShardConflict } from "../UsageRows.js"

/** The driver infers an array's type from its elements: a column that may hold only NULLs is typed here. */
const typedArray = (values: ReadonlyArray<unknown>, elementOid: number) =>
  Effect.fromResult(PgTypes.array(values, elementOid))

const enqueueResult = (
  accepted: ReadonlySet<string>,
  jobIds: ReadonlyArray<string>,
  duplicateMessageIds: ReadonlyArray<string>
): EnqueueResult => ({
  accepted: accepted.size,
  duplicates: duplicateMessageIds.length,
  jobsCreated: jobIds.length,
  jobIds,
  duplicateMessageIds
})

export const makeEnqueue = ({ newJobIds, sql }: StoreKit, { takeShard }: UsageWriter) => {
  /**
   * PostgreSQL: a request's dedupe, jobs and usage as one statement (data-modifying CTEs, atomic on their own), one
   * round trip instead of five (BEGIN, seen ids, jobs, usage, COMMIT). Between those, the transaction waited for the
   * event loop to send its next statement while holding its locks ("idle in transaction" under load).
   * A row id is drawn for every entry with a body, used by those accepted (gaps are harmless; ids stay unique and in
   * time order); `fanout` holds one row per message, its first destination's job, carrying the others' destinations
   * (their jobs made when it is claimed, migration 21). Seen rows are inserted in message-id order:
   * concurrent requests lock them in one order.
   */
  return Effect.fnUntraced(
    function*(sourceId: string, entries: ReadonlyArray<EnqueueEntry>, now: number, options?: EnqueueOptions) {
      const { duplicateMessageIds, unique } = firstOfEachMessageId(entries)
      const inputs = Array.from(unique.values())
      // Per message with a body: its row's id, message and destination, and the destinations it carries (JSON).
      const withBody = inputs.filter((entry) => entry.body !== undefined)
      const ids = newJobIds(now, withBody.length)
      const fanoutDestinations: Array<string> = []
      const carried: Array<string | null> = []
      const carriedCounts: Array<number> = []
      for (const entry of withBody) {
        const destinations = destinationsOf(entry)
        fanoutDestinations.push(destinations[0]!)
        carried.push(carriedDestinations(destinations))
        carriedCounts.push(destinations.length - 1)
      }
      const fanOuts = yield* typedArray(carried, PgTypes.OID.text)
      const userIds = yield* typedArray(inputs.map((entry) => entry.userId ?? null), PgTypes.OID.text)
      const bodies = yield* typedArray(inputs.map((entry) => entry.body ?? null), PgTypes.OID.bytea)
      const types = yield* typedArray(inputs.map((entry) => entry.type ?? null), PgTypes.OID.text)
      const events = yield* typedArray(inputs.map((entry) => entry.event ?? null), PgTypes.OID.text)
      const anonymousIds = yield* typedArray(inputs.map((entry) => entry.anonymousId ?? null), PgTypes.OID.text)
      const jobCounts = inputs.map((entry) => entry.body === undefined ? 0 : destinationsOf(entry).length)
      const rows = yield* sql<{ message_id: string }>`
        WITH input AS (
          SELECT * FROM unnest(
            ${inputs.map((entry) => entry.messageId)}::text[],
            ${userIds}::text[], ${bodies}::bytea[], ${types}::text[], ${events}::text[],
            ${inputs.map((entry) => entry.filtered === true)}::boolean[],
            ${inputs.map((entry) => entry.body !== undefined)}::boolean[],
            ${anonymousIds}::text[], ${jobCounts}::int[]
          ) AS t(message_id, user_id, body, message_type, event, filtered, has_body, anonymous_id, job_count)
        ),
        fanout AS (
          SELECT * FROM unnest(${ids}::text[], ${withBody.map((entry) => entry.messageId)}::text[],
            ${fanoutDestinations}::text[],
            ${fanOuts}::text[], ${carriedCounts}::int[]) AS f(id, message_id, destination_id, fan_out, fan_out_count)
        ),
        seen AS (
          INSERT INTO seen_messages (source_id, message_id, seen_at)
          SELECT ${sourceId}, message_id, ${now} FROM input ORDER BY message_id
          ON CONFLICT (source_id, message_id) DO UPDATE SET seen_at = excluded.seen_at
          WHERE seen_messages.seen_at <= ${now - dedupeWindowMs}
          RETURNING message_id
        ),
        accepted AS (SELECT input.* FROM input JOIN seen USING (message_id)),
        logged AS (
          INSERT INTO message_log (source_id, message_id, received_at, type, event, user_id, anonymous_id, job_count)
          SELECT ${sourceId}, message_id, ${now}, message_type, event, user_id, anonymous_id, job_count FROM accepted
          RETURNING seq, message_id
        ),
        created AS (
          INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, status, created_at,
            next_due_at, message_type, event, trace_parent, log_seq, fan_out, fan_out_count)
          SELECT fanout.id, ${sourceId}, fanout.destination_id, message_id, user_id, 'message', body, 'pending', ${now},
            ${now}, message_type, event, ${options?.traceparent ?? null}::text, logged.seq, fanout.fan_out,
            fanout.fan_out_count
          FROM accepted JOIN fanout USING (message_id) JOIN logged USING (message_id) WHERE has_body
        ),
        usage AS (
          INSERT INTO usage_daily (source_id, day, shard, api_calls, messages, filtered)
          SELECT ${sourceId}, ${utcDay(now)}, ${takeShard()}, ${options?.countApiCall === false ? 0 : 1},
            (SELECT count(*) FROM accepted), (SELECT count(*) FROM accepted WHERE NOT has_body AND filtered)
          ${sql.literal(usageOnShardConflict)}
        )
        SELECT message_id FROM seen`
      const accepted = new Set(rows.map((row) => row.message_id))
      const jobIds: Array<string> = []
      for (const entry of inputs) if (!accepted.has(entry.messageId)) duplicateMessageIds.push(entry.messageId)
      withBody.forEach((entry, i) => {
        if (!accepted.has(entry.messageId)) return
        jobIds.push(...jobIdsOf(ids[i]!, carriedCounts[i]! + 1))
      })
      return enqueueResult(accepted, jobIds, duplicateMessageIds)
    },
    untraced,
    fail("enqueue")
  )
}
