/**
 * The SQLite thread's program (see `SqliteConnection`): it owns the store's one better-sqlite3
 * connection and runs, in the order they arrive, the statements of the `SqlClient` and the hot
 * transactions (`SqliteTransactions`). It imports no package: better-sqlite3 is loaded from the
 * absolute path the main thread found.
 */
import { createRequire } from "node:module"
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads"
import { makeJobIds } from "../Rows.js"
import { encodeClaim } from "./ClaimWire.js"
import { type CompleteWire, decodeComplete } from "./CompleteWire.js"
import { decodeEnqueue, type EnqueueWire } from "./EnqueueWire.js"
import { RecentMessageIds } from "./RecentMessageIds.js"
import type { Database, PreparedStatement } from "./SqliteDriver.js"
import type { MergeRequest } from "./SqliteMessageIdMerge.js"
import type { ClaimRequest, PurgeRequest } from "./SqliteRequests.js"
import { prepareTransactions, type Transactions } from "./SqliteTransactions.js"

export interface ThreadData {
  readonly driver: string
  readonly filename: string
  /** A read-only connection (`SqliteConnection.layerReader`): reads beside the writer, WAL mode as the writer set it. */
  readonly readonly: boolean
}

/** How a statement's result comes back: row objects, the run result of a writer, or rows as arrays. */
export type ExecuteMode = "rows" | "raw" | "values" | "unprepared"

export type ThreadRequest =
  | {
    readonly id: number
    readonly op: "execute"
    readonly sql: string
    readonly params: ReadonlyArray<unknown>
    readonly mode: ExecuteMode
  }
  | { readonly id: number; readonly op: "enqueue"; readonly wire: EnqueueWire }
  | { readonly id: number; readonly op: "claim"; readonly request: ClaimRequest }
  | { readonly id: number; readonly op: "complete"; readonly wire: CompleteWire }
  | { readonly id: number; readonly op: "purge"; readonly request: PurgeRequest }
  | { readonly id: number; readonly op: "merge"; readonly request: MergeRequest }
  | { readonly op: "close" }

export type ThreadReply =
  | { readonly ready: true }
  | { readonly ready: false; readonly message: string; readonly code: string | undefined }
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly message: string; readonly code: string | undefined }

/**
 * The bound of a group commit (see `runEnqueues`), in messages. A request is answered after its whole group, and while it
 * waits its client sends nothing and the event loop has nothing of its to parse: requests of 100 messages grouped up
 * to 500 (a closed loop of 8 clients, `bench/endToEnd.ts`) were accepted slower, though the store alone took them
 * as fast; pairs of 15-message requests (analytics-node's batches) gained nothing. A single message's commit is much
 * of its cost: those are what groups are for (bench/NOTES.md, "Group commit").
 */
const maxGroupRows = 16

type EnqueueMessage = Extract<ThreadRequest, { op: "enqueue" }>

/** How many prepared statements are kept (by SQL text); the oldest goes first. */
const prepareCacheSize = 200

const failure = (error: unknown) => ({
  message: error instanceof Error ? error.message : String(error),
  code: typeof (error as { code?: unknown })?.code === "string" ? (error as { code: string }).code : undefined
})

type Port = NonNullable<typeof parentPort>

/** Opens the database (the writer in WAL mode); when it cannot, tells the main thread and returns `undefined`. */
const openDatabase = (port: Port, data: ThreadData): Database | undefined => {
  try {
    const Driver = createRequire(data.driver)(data.driver) as new(
      filename: string,
      options: { readonly readonly: boolean }
    ) => Database
    const db = new Driver(data.filename, { readonly: data.readonly })
    if (!data.readonly) db.pragma("journal_mode = WAL")
    return db
  } catch (error) {
    port.postMessage({ ready: false, ...failure(error) } satisfies ThreadReply)
    return undefined
  }
}

/** Runs one `SqlClient` statement, prepared once per SQL text (the last `prepareCacheSize` kept). */
const makeExecute = (db: Database) => {
  const cache = new Map<string, PreparedStatement>()
  const prepared = (sql: string): PreparedStatement => {
    let statement = cache.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (cache.size >= prepareCacheSize) cache.delete(cache.keys().next().value!)
      cache.set(sql, statement)
    }
    return statement
  }
  const execute = (sql: string, params: ReadonlyArray<unknown>, mode: ExecuteMode): unknown => {
    const statement = mode === "unprepared" ? db.prepare(sql) : prepared(sql)
    if (statement.reader) {
      if (mode !== "values") return statement.all(...params)
      statement.raw(true)
      try {
        return statement.all(...params)
      } finally {
        statement.raw(false)
      }
    }
    const result = statement.run(...params)
    return mode === "raw" ? result : []
  }
  return execute
}

/** Runs requests and answers each on `port`: statements, hot transactions, ingest requests grouped in one commit. */
const makeRequests = (port: Port, db: Database) => {
  const execute = makeExecute(db)

  // Prepared at the first hot transaction: by then the store has migrated the schema (through `execute`).
  let transactions: Transactions | undefined
  const newJobIds = makeJobIds()
  const recent = new RecentMessageIds()
  const hot = (): Transactions => transactions ??= prepareTransactions(db, newJobIds, recent)

  const runOne = (message: Exclude<ThreadRequest, { op: "close" }>) => {
    try {
      if (message.op === "claim") {
        const value = encodeClaim(hot().claim(message.request))
        return port.postMessage({ id: message.id, ok: true, value } satisfies ThreadReply, [value.bodies.buffer])
      }
      const value = message.op === "execute"
        ? execute(message.sql, message.params, message.mode)
        : message.op === "enqueue"
        ? hot().enqueue(decodeEnqueue(message.wire))
        : message.op === "purge"
        ? hot().purge(message.request)
        : message.op === "merge"
        ? hot().merge(message.request)
        : hot().complete(decodeComplete(message.wire))
      port.postMessage({ id: message.id, ok: true, value } satisfies ThreadReply)
    } catch (error) {
      port.postMessage({ id: message.id, ok: false, ...failure(error) } satisfies ThreadReply)
    }
  }

  // Ingest requests that queued up while the thread was busy share one transaction (group commit): each runs in a
  // savepoint of its own, so one that fails rolls back alone, and each is answered only after the shared COMMIT. A
  // commit writes every page it touched to the WAL (the jobs table, its indexes, the dedupe table, the usage row), and
  // the checkpoint copies them back: requests committed together share those pages instead of writing them each.
  const commitGroup = db.transaction((group: ReadonlyArray<EnqueueMessage>, replies: Array<ThreadReply>) => {
    for (let i = 0; i < group.length; i++) {
      const id = group[i]!.id
      try {
        // Nested in the group's transaction, better-sqlite3 runs it in a savepoint.
        replies[i] = { id, ok: true, value: hot().enqueue(decodeEnqueue(group[i]!.wire)) }
      } catch (error) {
        // Some errors (a full disk, an I/O error) end the whole transaction: nothing of the group is kept, and
        // nothing more may run outside it.
        if (!db.inTransaction) throw error
        replies[i] = { id, ok: false, ...failure(error) }
      }
    }
  })
  const runEnqueues = (group: ReadonlyArray<EnqueueMessage>) => {
    if (group.length === 1 || db.inTransaction) {
      for (const message of group) runOne(message)
      return
    }
    const replies = new Array<ThreadReply>(group.length)
    const mark = recent.mark()
    try {
      commitGroup(group, replies)
      recent.commit()
    } catch (error) {
      recent.rollbackTo(mark)
      for (let i = 0; i < group.length; i++) replies[i] = { id: group[i]!.id, ok: false, ...failure(error) }
    }
    for (const reply of replies) port.postMessage(reply)
  }

  return { runOne, runEnqueues }
}

/** The thread's loop: opens the database, then runs what arrives in order until `close`. */
const run = (port: Port, data: ThreadData) => {
  const db = openDatabase(port, data)
  if (db === undefined) return
  const { runEnqueues, runOne } = makeRequests(port, db)

  const close = () => {
    db.close()
    port.close()
  }

  port.on("message", (first: ThreadRequest) => {
    if (first.op === "close") return close()
    if (first.op !== "enqueue") return runOne(first)
    // What else is queued already is taken now, in order: the small ingest requests at its head join the group.
    const group = [first]
    let rows = first.wire.rows
    let next: ThreadRequest | undefined
    while (rows < maxGroupRows) {
      next = (receiveMessageOnPort(port) as { message: ThreadRequest } | undefined)?.message
      if (next === undefined || next.op !== "enqueue" || rows + next.wire.rows > maxGroupRows) break
      group.push(next)
      rows += next.wire.rows
      next = undefined
    }
    runEnqueues(group)
    if (next === undefined) return
    if (next.op === "close") return close()
    runOne(next)
  })
  port.postMessage({ ready: true } satisfies ThreadReply)
}

if (parentPort !== null) run(parentPort, workerData as ThreadData)
