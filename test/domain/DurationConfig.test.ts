import { describe, expect, it } from "@effect/vitest"
import { Duration, Either, Option } from "effect"
import { parseDuration, parsePositiveDuration } from "../../src/domain/DurationConfig.js"

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
    expect(Either.map(parsePositiveDuration("2 seconds"), Duration.toMillis)).toEqual(Either.right(2000))
    expect(parsePositiveDuration("0")).toEqual(Either.left("must be longer than zero, got \"0\""))
    expect(Either.isLeft(parsePositiveDuration("-1 seconds"))).toBe(true)
  })
})
