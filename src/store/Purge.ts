import { Context, Effect } from "effect"
import type { StoreError } from "./StoreError.js"
import { fail, type HotPaths, inChunks, type StoreKit } from "./StoreKit.js"

export interface PurgeShape {
  /**
   * Deletes delivered jobs finished before `olderThan`, with their attempts, and the message log's rows of messages
   * received before it (REFERENCE §12). Returns jobs deleted.
   */
  readonly purgeDelivered: (olderThan: number) => Effect.Effect<number, StoreError>
  /** Forgets message ids seen before `olderThan` (call with now − 24 h). Returns rows deleted. */
  readonly purgeSeen: (olderThan: number) => Effect.Effect<number, StoreError>
  /** Explicit admin purge of dead letters finished before `olderThan` (optionally of one source). */
  readonly purgeDeadLetters: (options: {
    readonly olderThan: number
    readonly sourceId?: string | undefined
  }) => Effect.Effect<number, StoreError>
}

/** Retention: finished jobs and their attempts, dead letters on an operator's word, message ids past the dedupe window. */
export class Purge extends Context.Service<Purge, PurgeShape>()("hookrelay/store/Purge") {}

/** Jobs per purge chunk where a chunk is a transaction of several round trips (PostgreSQL). */
export const purgeChunk = 1000

export const make = (
  { sql }: StoreKit,
  hot: HotPaths
): PurgeShape => {
  /**
   * Each source's log rows go oldest first up to its first one still kept: receipts grow with seq, so the walk from
   * the source's oldest row reads only what it deletes (no index by time), and a message whose clock ran behind waits
   * for the next. The sources one seek each through `(source_id, seq)`.
   */
  const purgeMessageLog = (olderThan: number) =>
    Effect.gen(function*() {
      let total = 0
      let sourceId = ""
      for (;;) {
        const next = yield* sql<{ source_id: string }>`
          SELECT source_id FROM message_log WHERE source_id > ${sourceId} ORDER BY source_id LIMIT 1`
        if (next[0] === undefined) return total
        sourceId = next[0].source_id
        const kept = yield* sql<{ seq: unknown }>`
          SELECT seq FROM message_log WHERE source_id = ${sourceId} AND received_at >= ${olderThan}
          ORDER BY seq LIMIT 1`
        const below = kept[0] === undefined ? sql`` : sql` AND seq < ${kept[0].seq}`
        const source = sourceId
        total += yield* inChunks(purgeChunk * 5, (limit) =>
          Effect.map(
            sql<{ seq: unknown }>`
              DELETE FROM message_log WHERE source_id = ${source} AND seq IN (
                SELECT seq FROM message_log WHERE source_id = ${source}${below} ORDER BY seq LIMIT ${limit})
              RETURNING seq`,
            (rows) => rows.length
          ))
      }
    })

  const purgeDelivered = Effect.fn("Store.purgeDelivered")(
    function*(olderThan: number) {
      const jobs = yield* hot.purgeJobs("delivered", olderThan, undefined)
      yield* purgeMessageLog(olderThan)
      return jobs
    },
    fail("purgeDelivered")
  )

  const purgeDeadLetters = Effect.fn("Store.purgeDeadLetters")(
    function*(options: { readonly olderThan: number; readonly sourceId?: string | undefined }) {
      return yield* hot.purgeJobs("dead", options.olderThan, options.sourceId)
    },
    fail("purgeDeadLetters")
  )

  const purgeSeen = Effect.fn("Store.purgeSeen")(
    function*(olderThan: number) {
      // On SQLite, what ingest saw since the last merge is in the message id log: merged first, it is purged as the
      // rest (a log row older than the dedupe window is one an idle store never merged).
      yield* hot.beforePurgeSeen
      return yield* inChunks(purgeChunk * 5, (limit) =>
        Effect.map(
          sql<{ source_id: string }>`
            DELETE FROM seen_messages WHERE (source_id, message_id) IN (
              SELECT source_id, message_id FROM seen_messages WHERE seen_at < ${olderThan} LIMIT ${limit})
            RETURNING source_id`,
          (rows) => rows.length
        ))
    },
    fail("purgeSeen")
  )

  return { purgeDelivered, purgeDeadLetters, purgeSeen }
}
