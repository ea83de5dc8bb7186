import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { RawSqlite } from "../../src/store/SqliteConnection.js"
import * as SqliteConnection from "../../src/store/SqliteConnection.js"

describe("SqliteConnection", () => {
  it.scoped("RawSqlite waits for a transaction in progress on the SqlClient, then sees what it committed", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const raw = yield* RawSqlite
      yield* sql`CREATE TABLE t (n INTEGER)`
      const inside = yield* Deferred.make<void>()
      const finish = yield* Deferred.make<void>()
      const transaction = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO t (n) VALUES (1)`
        yield* Deferred.succeed(inside, undefined)
        yield* Deferred.await(finish)
        yield* sql`INSERT INTO t (n) VALUES (2)`
      })))
      yield* Deferred.await(inside)
      const counted = yield* Effect.fork(
        raw.use((db) => (db.prepare("SELECT count(*) AS n FROM t").all() as Array<{ n: number }>)[0]!.n)
      )
      yield* Effect.yieldNow()
      assert.isNull(counted.unsafePoll(), "the raw call waits for the transaction's lock")
      yield* Deferred.succeed(finish, undefined)
      yield* Fiber.join(transaction)
      assert.strictEqual(yield* Fiber.join(counted), 2)
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))

  it.scoped("a throwing raw call is a SqlError and rolls nothing half-done into the file", () =>
    Effect.gen(function*() {
      const raw = yield* RawSqlite
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER NOT NULL)`
      const error = yield* raw.use((db) =>
        db.transaction(() => {
          db.prepare("INSERT INTO t (n) VALUES (1)").run()
          db.prepare("INSERT INTO t (n) VALUES (NULL)").run()
        })()
      ).pipe(Effect.flip)
      assert.strictEqual(error._tag, "SqlError")
      const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM t`
      assert.strictEqual(rows[0]!.n, 0)
    }).pipe(Effect.provide(SqliteConnection.layer(":memory:"))))
})
