import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Effect, Fiber, Layer, Redacted } from "effect"
import type { Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { Endpoints, type EndpointsShape } from "../../src/store/Endpoints.js"
import type { EndpointShareShape } from "../../src/store/EndpointShare.js"
import * as EndpointSharePg from "../../src/store/EndpointSharePg.js"
import { layerPg, layerSqlite } from "../../src/store/index.js"
import { makeMemory } from "../support/memoryEndpointShare.js"
import { databaseUrl, postgresUnavailable } from "../support/postgres.js"
import { skipUnlessCi } from "../support/services.js"

/**
 * The endpoint share's contract (migration 18), in memory and on PostgreSQL: two processes racing for one
 * transition see it happen once. SQLite has no share: its one process keeps circuits and limits in memory.
 */

const key = { sourceId: "shop", destinationId: "default", url: "https://a.example/hook" }

const contract = (
  name: string,
  processes: Effect.Effect<readonly [EndpointShareShape, EndpointShareShape], never, Scope.Scope>
) =>
  describe(`EndpointShare (${name})`, () => {
    it.live("concurrent failures from two processes open the circuit once", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* processes
        const now = yield* Clock.currentTimeMillis
        const results = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, index) => index),
          (index) => (index % 2 === 0 ? a : b).failed(key, { now, threshold: 5, probe: false }),
          { concurrency: "unbounded" }
        )
        expect(results.filter((result) => result.opened)).toHaveLength(1)
        const [circuit] = yield* a.circuits
        expect(circuit).toMatchObject({ key, state: "open", failures: 20, nextProbeAt: now + 5_000 })
      })))

    it.live("one probe at a time; a failed probe doubles the cool-off; a success closes once", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* processes
        const now = yield* Clock.currentTimeMillis
        yield* a.failed(key, { now, threshold: 1, probe: false })
        const early = yield* b.claimProbe(key, now, 35_000)
        expect(early).toMatchObject({ won: false, circuit: { state: "open" } })
        const claims = yield* Effect.forEach(
          [a, b, a, b, a, b],
          (process) => process.claimProbe(key, now + 5_000, 35_000),
          { concurrency: "unbounded" }
        )
        expect(claims.filter((claim) => claim.won)).toHaveLength(1)
        const winner = claims[claims.findIndex((claim) => claim.won)]!
        expect(winner.circuit).toMatchObject({ state: "probing", nextProbeAt: now + 40_000 })
        const prober = claims.findIndex((claim) => claim.won) % 2 === 0 ? a : b
        const other = prober === a ? b : a
        // Only the prober's failure counts as the probe's.
        expect((yield* other.failed(key, { now: now + 6_000, threshold: 1, probe: true })).circuit.state).toBe(
          "probing"
        )
        const failed = yield* prober.failed(key, { now: now + 6_000, threshold: 1, probe: true })
        expect(failed.circuit).toMatchObject({ state: "open", nextProbeAt: now + 16_000 })
        expect(failed.opened).toBe(false)
        expect((yield* other.claimProbe(key, now + 16_000, 35_000)).won).toBe(true)
        // An aborted probe is free again at once, for the other process.
        yield* other.probeAborted(key, now + 17_000)
        expect((yield* prober.claimProbe(key, now + 17_000, 35_000)).won).toBe(true)
        const closed = yield* Effect.forEach([a, b], (process) => process.succeeded(key), { concurrency: "unbounded" })
        expect(closed.filter(Boolean)).toHaveLength(1)
        expect(yield* a.circuits).toHaveLength(0)
        expect(yield* b.claimProbe(key, now + 20_000, 35_000)).toStrictEqual({ won: false, circuit: undefined })
      })))

    it.live("start instants reserved by two processes never overlap", () =>
      Effect.scoped(Effect.gen(function*() {
        const [a, b] = yield* processes
        // Each reservation's first instant on this clock: when its answer came, plus its delay on the store's.
        const firsts = yield* Effect.forEach(
          Array.from({ length: 40 }, (_, index) => index),
          (index) =>
            Effect.flatMap(
              (index % 2 === 0 ? a : b).reserveStarts(key, 20, 5),
              ({ first, now: storeNow }) => Effect.map(Clock.currentTimeMillis, (now) => now + first - storeNow)
            ),
          // One reservation in flight per process, as its guard makes them.
          { concurrency: 2 }
        )
        // 40 blocks of 5 instants 20 ms apart: each block 100 ms after the one before, whichever process took it (less
        // the answers' differing latencies, on this side).
        const sorted = [...firsts].sort((x, y) => x - y)
        for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThan(60)
        expect(sorted[sorted.length - 1]! - sorted[0]!).toBeGreaterThan(3_800)
      })))
  })

contract(
  "memory",
  Effect.map(Clock.Clock, (clock) => {
    const memory = makeMemory(clock)
    return [memory.process(), memory.process()] as const
  })
)

const skipPg = skipUnlessCi("EndpointShare on PostgreSQL", await postgresUnavailable())

/** A fresh schema migrated by the store, and two processes' shares over connections of their own. */
const pgProcesses = Effect.gen(function*() {
  const schema = `hookrelay_share_${randomBytes(6).toString("hex")}`
  const url = Redacted.make(databaseUrl)
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
    }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })), Effect.orDie)
  )
  const share = Context.get(yield* Layer.build(layerPg({ url, schema, maxConnections: 2 })), Endpoints).share
  expect(share).toBeDefined()
  const sql = Context.get(
    yield* Layer.build(PgClient.layer({ url, maxConnections: 4, startupParameters: { search_path: schema } })),
    PgClient.PgClient
  )
  return { processes: [share!, EndpointSharePg.make(sql)] as const, sql }
})

describe.skipIf(skipPg)("PostgreSQL", () => {
  contract("PostgreSQL", Effect.orDie(Effect.map(pgProcesses, ({ processes }) => processes)))

  it.live("a reservation that waited for the row's lock reads the clock after it: its instants start then", () =>
    Effect.scoped(Effect.gen(function*() {
      const { processes: [a], sql } = yield* Effect.orDie(pgProcesses)
      yield* a.reserveStarts(key, 10, 1)
      // Another session holds the endpoint's row for 300 ms while the reservation waits for it.
      const released = yield* Effect.forkChild(
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT next_free_at FROM endpoint_rates FOR UPDATE`
          yield* Effect.sleep(300)
          return yield* Clock.currentTimeMillis
        }))
      )
      yield* Effect.sleep(50)
      const reserved = yield* a.reserveStarts(key, 10, 1)
      const releasedAt = yield* Fiber.join(released)
      // The database and this process share the machine's clock: the reading is from after the wait, and the first
      // instant is not in the past of it.
      expect(reserved.now).toBeGreaterThanOrEqual(releasedAt - 5)
      expect(reserved.first).toBeGreaterThanOrEqual(reserved.now - 1)
    })))
})

/** Two processes disabling one endpoint: the first is told it did (it alone tells the operator). */
const disablesOnce = (endpoints: Effect.Effect<EndpointsShape, never, Scope.Scope>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* endpoints
    const answers = yield* Effect.forEach([1, 2, 3], (at) => store.disableEndpoint(key, at, "HTTP 410 Gone"), {
      concurrency: "unbounded"
    })
    expect(answers.filter(Boolean)).toHaveLength(1)
    expect(yield* store.disabledEndpoints()).toHaveLength(1)
  }))

describe.skipIf(skipPg)("disableEndpoint on PostgreSQL", () => {
  it.live("answers true to the one call that disabled it", () =>
    disablesOnce(Effect.orDie(Effect.gen(function*() {
      const schema = `hookrelay_share_${randomBytes(6).toString("hex")}`
      const url = Redacted.make(databaseUrl)
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          const sql = yield* PgClient.PgClient
          yield* sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`
        }).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })), Effect.orDie)
      )
      return Context.get(yield* Layer.build(layerPg({ url, schema, maxConnections: 4 })), Endpoints)
    }))))
})

describe("SQLite", () => {
  it.live("disableEndpoint answers true to the one call that disabled it", () =>
    disablesOnce(Effect.orDie(Effect.gen(function*() {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-share-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
      return Context.get(yield* Layer.build(layerSqlite({ directory })), Endpoints)
    }))))

  it.live("has no share: one process keeps its circuits and limits in memory", () =>
    Effect.gen(function*() {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-share-"))
      const share = yield* Effect.map(Endpoints, (endpoints) => endpoints.share).pipe(
        Effect.provide(layerSqlite({ directory })),
        Effect.ensuring(Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
      )
      expect(share).toBeUndefined()
    }))
})
