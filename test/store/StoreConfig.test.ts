import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Context, Duration, Effect, FileSystem, Layer, Option, Redacted, Result } from "effect"
import { TestClock } from "effect/testing"
import {
  layerRetention,
  layerSqlite,
  parseRetention,
  postgresUrlConfig,
  retentionConfig
} from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import { pendingSleeps } from "../support/pendingSleeps.js"
import { entry } from "./storeSuite.js"

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))

describe("store configuration", () => {
  it("HOOKRELAY_RETENTION takes days or a duration", () => {
    assert.deepStrictEqual(parseRetention("7"), Result.succeed(Duration.days(7)))
    assert.deepStrictEqual(parseRetention(" 36 hours "), Result.succeed(Duration.hours(36)))
    assert.deepStrictEqual(parseRetention("2 days"), Result.succeed(Duration.days(2)))
    assert.isTrue(Result.isFailure(parseRetention("0")))
    assert.isTrue(Result.isFailure(parseRetention("soon")))
    assert.isTrue(Result.isFailure(parseRetention("-3 days")))
  })

  it.effect("retention defaults to 7 days and rejects nonsense", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* retentionConfig.pipe(withEnv({})), Duration.days(7))
      assert.deepStrictEqual(yield* retentionConfig.pipe(withEnv({ HOOKRELAY_RETENTION: "3" })), Duration.days(3))
      const error = yield* Effect.flip(retentionConfig.pipe(withEnv({ HOOKRELAY_RETENTION: "forever" })))
      assert.include(Cause.pretty(Cause.fail(error)), "HOOKRELAY_RETENTION")
    }))

  it.effect("a postgres:// DATABASE_URL selects PostgreSQL, anything else SQLite", () =>
    Effect.gen(function*() {
      const url = (env: Record<string, string>) =>
        postgresUrlConfig.pipe(withEnv(env), Effect.map(Option.map(Redacted.value)))
      assert.deepStrictEqual(yield* url({ DATABASE_URL: "postgres://u@h/db" }), Option.some("postgres://u@h/db"))
      assert.deepStrictEqual(yield* url({ DATABASE_URL: "postgresql://u@h/db" }), Option.some("postgresql://u@h/db"))
      assert.deepStrictEqual(yield* url({ DATABASE_URL: "sqlite:///tmp/x.db" }), Option.none())
      assert.deepStrictEqual(yield* url({}), Option.none())
    }))
})

describe("retention layer", () => {
  it.effect("purges on its schedule, driven by the Clock", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const directory = yield* fs.makeTempDirectoryScoped()
      const { clock, provide, sleeps } = yield* pendingSleeps
      const context = yield* Layer.build(
        layerRetention({ retention: "1 day", every: "1 hour" }).pipe(Layer.provideMerge(layerSqlite({ directory })))
      ).pipe(provide)
      const outbox = Context.get(context, Outbox)
      // TestClock starts at 0: a job delivered at 0 is purged once the clock passes 1 day.
      yield* outbox.enqueue("web", [entry("m1"), entry("m2")], 0)
      const jobs = yield* outbox.claimDue("w", 0, 10, 60_000)
      yield* outbox.completeMany("w", jobs.map((job) => ({ _tag: "Delivered" as const, jobId: job.id, at: 0 })))

      // A pass waits for the SQLite thread (a message, not a fiber), so the clock moves one period at a time, each
      // step only once the previous pass has finished: the retention fiber is asleep again, due one period later.
      const hour = 3600_000
      const parkedUntil = (due: number) =>
        Effect.gen(function*() {
          for (let waited = 0; waited < 5_000; waited += 5) {
            if ((yield* sleeps).includes(due)) return
            yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))
          }
          assert.fail(`the retention pass did not go back to sleep until ${due}`)
        })
      const passesUntil = (hours: number) =>
        Effect.gen(function*() {
          for (let at = clock.currentTimeMillisUnsafe() / hour + 1; at <= hours; at++) {
            yield* parkedUntil(at * hour)
            yield* TestClock.adjust("1 hour")
          }
          yield* parkedUntil((hours + 1) * hour)
        })
      const delivered = () => Effect.map(outbox.backlog(), (backlog) => backlog.delivered)
      yield* passesUntil(24)
      // At 24 h the jobs are exactly one retention old: kept.
      assert.strictEqual(yield* delivered(), 2)
      yield* passesUntil(25)
      // Seen ids are forgotten after 24 h, delivered jobs after the retention.
      assert.strictEqual(yield* delivered(), 0)
      assert.strictEqual((yield* outbox.enqueue("web", [entry("m1")], 25 * 3600_000)).accepted, 1)
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
