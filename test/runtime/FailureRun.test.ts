import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { makeFailureRun } from "../../src/runtime/FailureRun.js"

describe("FailureRun", () => {
  it.effect("logs the first failure of a run and the success that ends it, nothing in between", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ logLevel, message }) => {
        lines.push(`${logLevel.toUpperCase()} ${String(Array.isArray(message) ? message[0] : message)}`)
      })
      const run = yield* makeFailureRun("the count")
      const results = yield* Effect.all([
        run.succeeded,
        run.failed(new Error("down")),
        run.failed(new Error("down")),
        run.failed(new Error("down")),
        run.succeeded,
        run.succeeded,
        run.failed(new Error("down again"))
      ]).pipe(Effect.provide(Logger.layer([capture])))
      assert.deepStrictEqual(results, [false, true, false, false, true, false, true])
      assert.deepStrictEqual(lines, [
        "WARN the count failed; trying again until it succeeds",
        "INFO the count succeeded again after 3 failed tries",
        "WARN the count failed; trying again until it succeeds"
      ])
    }))
})
