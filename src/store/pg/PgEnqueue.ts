import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Effect } from "effect"
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
   * Job ids are drawn for every destination of every entry with a body, used by those accepted (gaps are harmless; ids
   * stay unique and in time order); `fanout` pairs each with its message and destination, and, for a message with
   * several jobs, the id its body is stored under once (`message_bodies`). Seen rows are inserted in message-id
   * order: concurrent requests lock them in one order.
   */
  return Effect.fnUntraced(
    function*(sourceId: string, entries: ReadonlyArray<EnqueueEntry>, now: number, options?: EnqueueOptions) {
      const { duplicateMessageIds, unique } = firstOfEachMessageId(entries)
      const inputs = Array.from(unique.values())
      const fanout: Array<string> = []
      const fanoutDestinations: Array<string> = []
      // Per job: its message's first job id when the message has several (its body is stored once), else null.
      const fanoutBodyIds: Array<number | null> = []
      for (const entry of inputs) {
        if (entry.body === undefined) continue
        const destinations = destinationsOf(entry)
        const first = fanout.length
        for (const destinationId of destinations) {
          fanout.push(entry.messageId)
          fanoutDestinations.push(destinationId)
          fanoutBodyIds.push(destinations.length > 1 ? first : null)
        }
      }
      const ids = newJobIds(now, fanout.length)
      const bodyIds = yield* typedArray(fanoutBodyIds.map((at) => at === null ? null : ids[at]!), PgTypes.OID.text)
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
          SELECT * FROM unnest(${ids}::text[], ${fanout}::text[], ${fanoutDestinations}::text[], ${bodyIds}::text[])
            AS f(id, message_id, destination_id, body_id)
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
          INSERT INTO jobs (id, source_id, destination_id, message_id, user_id, kind, body, body_id, status,
            created_at, next_due_at, message_type, event, trace_parent, log_seq)
          SELECT fanout.id, ${sourceId}, fanout.destination_id, message_id, user_id, 'message',
            CASE WHEN fanout.body_id IS NULL THEN body ELSE ''::bytea END, fanout.body_id, 'pending', ${now}, ${now},
            message_type, event, ${options?.traceparent ?? null}::text, logged.seq
          FROM accepted JOIN fanout USING (message_id) JOIN logged USING (message_id) WHERE has_body
        ),
        shared_bodies AS (
          INSERT INTO message_bodies (id, body)
          SELECT fanout.id, body FROM accepted JOIN fanout USING (message_id) WHERE fanout.id = fanout.body_id
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
      fanout.forEach((messageId, i) => {
        if (accepted.has(messageId)) jobIds.push(ids[i]!)
      })
      return enqueueResult(accepted, jobIds, duplicateMessageIds)
    },
    untraced,
    fail("enqueue")
  )
}
