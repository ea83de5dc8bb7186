import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { isStoreUnavailable, StoreError } from "../../src/store/StoreError.js"
import { fail } from "../../src/store/StoreKit.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * A PostgreSQL transaction whose connection is cut (a restart, a failover, an administrator) is the store failing: a
 * `StoreError` that says the store is unavailable, which the dispatcher's completions and ingest retry or answer 503,
 * not a defect (effect/sql makes the failed ROLLBACK one) that would end the fiber that ran it. SQLite has no
 * connection to lose.
 */

const skip = skipUnlessCi("PgConnectionLoss", await postgresUnavailable())

const pg = PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 2 })

describe.skipIf(skip)("a store transaction whose PostgreSQL connection is terminated", () => {
  it.live("fails with a StoreError saying the store is unavailable", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const marker = `connection_loss_${process.pid}_${Date.now()}`
      const transaction = yield* Effect.forkChild(Effect.exit(
        sql.withTransaction(sql.unsafe(`SELECT pg_sleep(10), '${marker}'`)).pipe(fail("demo"))
      ))
      // Its backend, found by the statement's text (the marker is in it, not a parameter), is terminated from another
      // session.
      let terminated = 0
      for (let tries = 0; tries < 100 && terminated === 0; tries++) {
        yield* Effect.sleep("50 millis")
        const rows = yield* sql<{ done: boolean }>`
          SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
          WHERE query LIKE ${`%${marker}%`} AND pid <> pg_backend_pid()`
        terminated = rows.filter((row) => row.done).length
      }
      expect(terminated).toBe(1)
      const exit = yield* Fiber.join(transaction)
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(false)
      const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
      const storeError = error?._tag === "Some" ? error.value : undefined
      expect(storeError).toBeInstanceOf(StoreError)
      expect(storeError!.operation).toBe("demo")
      expect(isStoreUnavailable(storeError!)).toBe(true)
    }).pipe(Effect.provide(pg)), 30_000)

  it.live("a defect that is not the driver's stays a defect", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.die(new Error("a bug")).pipe(fail("demo")))
      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
    }))
})
