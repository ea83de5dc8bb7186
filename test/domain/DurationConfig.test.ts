import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Option, Result } from "effect"
import { parseDuration, parsePositiveDuration, positiveDurationConfig } from "../../src/domain/DurationConfig.js"

const millis = (input: string) => Option.map(parseDuration(input), Duration.toMillis)

describe("durations as operators write them", () => {
  it("takes milliseconds and Effect's form, refuses negative, infinite and unknown ones", () => {
    expect(millis("2000")).toEqual(Option.some(2000))
    expect(millis(" 24 hours ")).toEqual(Option.some(86_400_000))
    expect(millis("0 seconds")).toEqual(Option.some(0))
    expect(millis("-5 seconds")).toEqual(Option.none())
    expect(millis("Infinity")).toEqual(Option.none())
    expect(millis("soon")).toEqual(Option.none())
  })

  it("a positive duration refuses zero, naming what it got", () => {
    expect(Result.map(parsePositiveDuration("2 seconds"), Duration.toMillis)).toEqual(Result.succeed(2000))
    expect(parsePositiveDuration("0")).toEqual(Result.fail("must be longer than zero, got \"0\""))
    expect(Result.isFailure(parsePositiveDuration("-1 seconds"))).toBe(true)
  })

  it.effect("a setting: the default when unset, else a positive duration, else an error naming the variable", () =>
    Effect.gen(function*() {
      const config = positiveDurationConfig("HOOKRELAY_TEST_WAIT", Duration.seconds(3))
      const read = (env: Record<string, string>) => Effect.exit(config.parse(ConfigProvider.fromEnv({ env })))
      expect(Exit.map(yield* read({}), Duration.toMillis)).toStrictEqual(Exit.succeed(3000))
      expect(Exit.map(yield* read({ HOOKRELAY_TEST_WAIT: "1500" }), Duration.toMillis)).toStrictEqual(
        Exit.succeed(1500)
      )
      expect(Exit.map(yield* read({ HOOKRELAY_TEST_WAIT: "2 seconds" }), Duration.toMillis))
        .toStrictEqual(Exit.succeed(2000))
      for (const value of ["0", "soon", "-5"]) {
        const exit = yield* read({ HOOKRELAY_TEST_WAIT: value })
        expect(Exit.isFailure(exit)).toBe(true)
        const text = String(Exit.isFailure(exit) ? exit.cause : "")
        expect(text).toContain("HOOKRELAY_TEST_WAIT")
        expect(text).toContain(`got "${value}"`)
      }
    }))
})
