import { Context, Deferred, Duration, Effect, Exit, Latch, Layer, Option, type Scope, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { classifySqliteError, ConnectionError, SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import { Worker } from "node:worker_threads"
import { FifoGate } from "../../runtime/FifoGate.js"
import { Slots } from "../../runtime/Slots.js"
import type { ClaimedJob, CompleteResult, EnqueueResult } from "../Model.js"
import { type ClaimWire, decodeClaim } from "./ClaimWire.js"
import { encodeComplete } from "./CompleteWire.js"
import { encodeEnqueue } from "./EnqueueWire.js"
import { loadDriver } from "./SqliteDriver.js"
import type { MergeProgress, MergeRequest } from "./SqliteMessageIdMerge.js"
import type { ClaimRequest, CompleteRequest, EnqueueRequest, PurgeRequest } from "./SqliteRequests.js"
import { threadProgram } from "./SqliteThreadFile.js"
import type { ExecuteMode, ThreadData, ThreadReply, ThreadRequest } from "./SqliteThreadProgram.js"

/**
 * The store's hot transactions (ingest, claim, complete), each one message to the SQLite thread,
 * which runs it as one synchronous call on its connection (`SqliteTransactions`). Each statement
 * through `SqlClient` costs the Effect machinery around it, allocations and time per statement
 * (bench/NOTES.md, "Hot transactions are one call each"). They hold the same
 * lock as `SqlClient`'s statements and transactions, so nothing interleaves with them. Never call
 * them inside a `sql.withTransaction` (that transaction holds the lock).
 */
export class SqliteHotPaths extends Context.Service<SqliteHotPaths, {
  readonly enqueue: (request: EnqueueRequest) => Effect.Effect<EnqueueResult, SqlError>
  readonly claim: (request: ClaimRequest) => Effect.Effect<ReadonlyArray<ClaimedJob>, SqlError>
  readonly complete: (request: CompleteRequest) => Effect.Effect<CompleteResult, SqlError>
  readonly purge: (request: PurgeRequest) => Effect.Effect<number, SqlError>
  readonly merge: (request: MergeRequest) => Effect.Effect<MergeProgress, SqlError>
  /** Something may have been added to the message id log: an enqueue (noted by itself), jobs written through `SqlClient`. */
  readonly noteLogged: Effect.Effect<void>
  /** Waits for a `noteLogged` since the last wait (`MessageIdLog`). */
  readonly awaitLogged: Effect.Effect<void>
}>()("hookrelay/SqliteHotPaths") {}

/** A SqlError whose reason SQLite's code classifies (a constraint, a busy lock, ...); `cause` keeps that code. */
const sqlError = (cause: unknown, message: string, operation: string): SqlError =>
  new SqlError({ reason: classifySqliteError(cause, { message, operation }) })

/** The thread cannot answer at all: it did not start, failed or exited. */
const connectionError = (cause: unknown, message: string): SqlError =>
  new SqlError({ reason: new ConnectionError({ cause, message, operation: "connect" }) })

/** How long closing waits for the statements already sent before the thread is terminated. */
const closeWait = Duration.seconds(10)

/** better-sqlite3 returns blobs as Buffers; they cross the thread as plain Uint8Arrays. */
const asBuffers = (rows: unknown): unknown => {
  if (!Array.isArray(rows)) return rows
  for (const row of rows as Array<unknown>) {
    if (row === null || typeof row !== "object") continue
    const record = row as Record<string, unknown>
    for (const key in record) {
      const value = record[key]
      if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
        record[key] = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      }
    }
  }
  return rows
}

type Request = ThreadRequest extends infer R ? R extends { readonly id: number } ? Omit<R, "id"> : never : never

/** A `SqlClient` connection whose statements go to the thread through `send`. */
const connection = (send: (request: Request) => Effect.Effect<unknown, SqlError>): Connection => {
  const execute = (sql: string, params: ReadonlyArray<unknown>, mode: ExecuteMode) =>
    Effect.map(send({ op: "execute", sql, params, mode }), asBuffers)
  return {
    execute: (sql, params, transformRows) =>
      Effect.map(
        execute(sql, params, "rows"),
        (rows) =>
          transformRows === undefined ? rows as ReadonlyArray<never> : transformRows(rows as ReadonlyArray<never>)
      ),
    executeRaw: (sql, params) => execute(sql, params, "raw"),
    executeValues: (sql, params) =>
      execute(sql, params, "values") as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>,
    executeUnprepared: (sql, params, transformRows) =>
      Effect.map(
        execute(sql, params ?? [], "unprepared"),
        (rows) =>
          transformRows === undefined ? rows as ReadonlyArray<never> : transformRows(rows as ReadonlyArray<never>)
      ),
    executeValuesUnprepared: (sql, params) =>
      execute(sql, params, "values") as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>,
    executeStream: () => Stream.die(new Error("executeStream not implemented"))
  }
}

/** The hot transactions, each one message sent as any statement outside a transaction is. */
const hotPaths = (
  sendOutside: (request: Request, transfer?: ReadonlyArray<ArrayBuffer>) => Effect.Effect<unknown, SqlError>,
  loggedLatch: Latch.Latch
): SqliteHotPaths["Service"] => ({
  enqueue: (request) =>
    Effect.suspend(() => {
      const wire = encodeEnqueue(request)
      return Effect.map(sendOutside({ op: "enqueue", wire }, [wire.bodies.buffer]), (result) => {
        loggedLatch.openUnsafe()
        return result as EnqueueResult
      })
    }),
  claim: (request) => Effect.map(sendOutside({ op: "claim", request }), (wire) => decodeClaim(wire as ClaimWire)),
  // An endpoint state that is not JSON (a BigInt from a caller outside the types) fails the batch as the thread's
  // own encoding of it did, a SqlError, not a defect of the caller's fiber.
  complete: (request) =>
    Effect.flatMap(
      Effect.try({
        try: () => encodeComplete(request),
        catch: (cause) => sqlError(cause, "Failed to encode a completion batch", "complete")
      }),
      (wire) => sendOutside({ op: "complete", wire }, [wire.numbers.buffer]) as Effect.Effect<CompleteResult, SqlError>
    ),
  purge: (request) => sendOutside({ op: "purge", request }) as Effect.Effect<number, SqlError>,
  merge: (request) => sendOutside({ op: "merge", request }) as Effect.Effect<MergeProgress, SqlError>,
  noteLogged: loggedLatch.open,
  awaitLogged: Effect.andThen(loggedLatch.await, loggedLatch.close)
})

/** Sends `request` to the thread now; `answered` gets the thread's answer. */
type Post = (
  request: Request,
  transfer: ReadonlyArray<ArrayBuffer> | undefined,
  answered: (exit: Exit.Exit<unknown, SqlError>) => void
) => void

const replyExit = (reply: ThreadReply): Exit.Exit<unknown, SqlError> => {
  if ("ok" in reply && reply.ok) return Exit.succeed(reply.value)
  const message = "message" in reply ? reply.message : "no answer"
  const code = "code" in reply ? reply.code : undefined
  return Exit.fail(sqlError(Object.assign(new Error(message), { code }), message, "execute"))
}

/**
 * Starts the SQLite thread on `filename` and waits until it has opened the database; closing the scope asks it to
 * close (terminated after `closeWait`). Once the thread fails or exits, every request awaiting an answer, and every
 * later one, fails with that error.
 */
const openThread = (
  filename: string,
  options: { readonly readonly?: boolean }
): Effect.Effect<Post, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    const loaded = yield* Effect.try({
      try: () => ({ driver: loadDriver().path, program: threadProgram() }),
      catch: (cause) => sqlError(cause, "Failed to load the SQLite driver", "open")
    })
    const ready = yield* Deferred.make<void, SqlError>()
    const exited = yield* Deferred.make<void>()
    // A request's id is its slot: unique among the requests awaiting an answer, reused once answered.
    const waiting = new Slots<(reply: ThreadReply) => void>()
    let broken: SqlError | undefined

    const breakDown = (error: SqlError) => {
      broken ??= error
      Deferred.doneUnsafe(ready, Exit.fail(error))
      const callbacks = waiting.drain()
      for (const callback of callbacks) callback({ id: -1, ok: false, message: error.message, code: undefined })
    }

    const worker = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const workerData: ThreadData = { driver: loaded.driver, filename, readonly: options.readonly ?? false }
          const worker = loaded.program._tag === "Source"
            ? new Worker(loaded.program.source, { eval: true, workerData })
            : new Worker(loaded.program.url, { workerData })
          worker.on("message", (reply: ThreadReply) => {
            if ("ready" in reply) {
              return Deferred.doneUnsafe(
                ready,
                reply.ready ? Exit.void : Exit.fail(
                  sqlError(reply, `Failed to open the database: ${reply.message}`, "open")
                )
              )
            }
            waiting.take(reply.id)?.(reply)
          })
          worker.on("error", (cause) => breakDown(connectionError(cause, "The SQLite thread failed")))
          worker.on("exit", (code) => {
            breakDown(connectionError(code, `The SQLite thread exited (${code})`))
            Deferred.doneUnsafe(exited, Exit.void)
          })
          return worker
        },
        catch: (cause) => connectionError(cause, "Failed to start the SQLite thread")
      }),
      (worker) =>
        Effect.gen(function*() {
          if (broken !== undefined) return
          worker.postMessage({ op: "close" } satisfies ThreadRequest)
          const closed = yield* Deferred.await(exited).pipe(Effect.timeoutOption(closeWait))
          if (Option.isNone(closed)) yield* Effect.promise(() => worker.terminate())
        })
    )
    yield* Deferred.await(ready)

    const post: Post = (request, transfer, answered) => {
      if (broken !== undefined) return answered(Exit.fail(broken))
      const id = waiting.add((reply) => answered(replyExit(reply)))
      worker.postMessage({ ...request, id }, transfer)
    }
    return post
  })

/**
 * The two ways of sending over `post` under the connection's lock: `sendInside` for a transaction's statements (its
 * scope holds the lock), `sendOutside` for anything else (takes the lock just to send).
 */
const senders = (post: Post) => {
  // The thread runs what it receives in order, so only a transaction needs the lock for its whole scope: from its
  // BEGIN to its COMMIT nothing else may be sent. Anything else holds the lock just to be sent, and waits for its
  // answer without it: the thread always has the next statement or transaction queued (no round trip between them).
  // First in, first out: with Effect's Semaphore a loop of transactions (a retention purge's chunks, an audience
  // sync) took the lock back before the ingest commit waiting for it ever ran.
  const lock = new FifoGate(1)

  // Once sent, a request is waited for whatever happens to its caller: the thread runs it anyway.
  const sendInside = (request: Request): Effect.Effect<unknown, SqlError> =>
    Effect.uninterruptible(Effect.callback((resume) => post(request, undefined, resume)))

  // Sent while the lock is held, then waited for without it. A free lock (no transaction open or queued) is taken,
  // used and given back within the registration of one `callback`, a synchronous step nothing can interrupt: the same
  // order as `withPermit`, without its fiber steps and a Deferred on every tracking request and claim (a Deferred is
  // built by copying Effect's prototype, a visible share of the event loop under single-message ingest).
  // Otherwise the lock is waited for as interruptibly as the caller is.
  const sendOutside = (request: Request, transfer?: ReadonlyArray<ArrayBuffer>): Effect.Effect<unknown, SqlError> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.callback((resume) => {
        if (!lock.tryTake()) return resume(restore(sendWhenFree(request, transfer)))
        try {
          post(request, transfer, resume)
        } finally {
          lock.giveBack()
        }
      })
    )
  const sendWhenFree = (request: Request, transfer: ReadonlyArray<ArrayBuffer> | undefined) =>
    Effect.flatMap(
      lock.withPermit(Effect.sync(() => {
        const answer = Deferred.makeUnsafe<unknown, SqlError>()
        post(request, transfer, (exit) => Deferred.doneUnsafe(answer, exit))
        return answer
      })),
      (answer) => Effect.uninterruptible(Deferred.await(answer))
    )

  return { lock, sendInside, sendOutside }
}

/**
 * The store's one SQLite connection, on a thread of its own (`SqliteThreadProgram`): better-sqlite3
 * is synchronous, and on the event loop its claims and completions took a large share of the
 * dispatcher's time and its commits were pauses of ingest. Here the
 * main thread sends a statement or a whole transaction and goes on with HTTP until the answer comes.
 *
 * As in Effect's own SQLite clients, one connection serves every write (the long reads have a
 * connection of their own, `SqliteReader`). The thread runs what it receives in order; a transaction
 * holds a first-in-first-out, one-permit lock for its scope, so nothing else is
 * sent between its BEGIN and its COMMIT. Waits for answers are not interruptible: what was sent runs
 * to its end either way, and a claim's or a commit's answer must not be lost.
 */
export const make = (filename: string, options: { readonly readonly?: boolean } = {}): Effect.Effect<
  { readonly sql: SqlClient.SqlClient; readonly hot: SqliteHotPaths["Service"] },
  SqlError,
  Scope.Scope | Reactivity.Reactivity
> =>
  Effect.gen(function*() {
    const { lock, sendInside, sendOutside } = senders(yield* openThread(filename, options))
    const outside = connection(sendOutside)
    const inside = connection(sendInside)

    const sql = yield* SqlClient.make({
      acquirer: Effect.succeed(outside),
      // A statement outside a transaction borrows the connection without a scope of its own: it takes the lock itself.
      borrower: (f) => f(outside),
      transactionAcquirer: Effect.uninterruptibleMask((restore) =>
        Effect.as(Effect.andThen(restore(lock.take), Effect.addFinalizer(() => lock.release)), inside)
      ),
      compiler: Statement.makeCompilerSqlite(),
      driver: "sqlite-thread",
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    const hot = hotPaths(sendOutside, yield* Latch.make(false))
    return { sql, hot }
  })

/**
 * A second connection for the reads that need no transaction and can be long: the backlog counts (a walk of every
 * delivered job retention keeps), message search, attempts, dead letters, usage. Read-only, on a thread of its own:
 * in WAL mode a reader never waits for the writer nor holds it up, so such a read no longer queues in front of
 * ingest commits on the store's one writing connection. A read sent after a commit was answered sees that commit.
 */
export class SqliteReader extends Context.Service<SqliteReader, SqlClient.SqlClient>()("hookrelay/SqliteReader") {}

/** `SqliteReader` over a read-only connection to `filename` (which must exist, in WAL mode), closed with the layer. */
export const layerReader = (filename: string): Layer.Layer<SqliteReader, SqlError> =>
  Layer.effect(SqliteReader, Effect.map(make(filename, { readonly: true }), ({ sql }) => sql)).pipe(
    Layer.provide(Reactivity.layer)
  )

/** `SqlClient` and `SqliteHotPaths` over one connection to `filename` on its own thread, closed with the layer. */
export const layer = (filename: string): Layer.Layer<SqlClient.SqlClient | SqliteHotPaths, SqlError> =>
  Layer.effectContext(
    Effect.map(
      make(filename),
      ({ hot, sql }) => Context.make(SqlClient.SqlClient, sql).pipe(Context.add(SqliteHotPaths, hot))
    )
  ).pipe(Layer.provide(Reactivity.layer))
