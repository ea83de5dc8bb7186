import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"

/**
 * A duration as operators write it: milliseconds (`2000`) or Effect's form (`2 seconds`), finite and not negative
 * (Duration would clamp a negative amount to zero; it is refused instead).
 */
export const parseDuration = (input: string): Option.Option<Duration.Duration> => {
  const text = input.trim()
  if (text.startsWith("-")) return Option.none()
  const duration = /^\d+$/.test(text)
    ? Option.some(Duration.millis(Number(text)))
    : Duration.fromInput(text as Duration.Input)
  return Option.filter(duration, Duration.isFinite)
}

/** A positive duration as operators write it (`parseDuration`), or why it is not one. */
export const parsePositiveDuration = (input: string): Result.Result<Duration.Duration, string> =>
  Option.match(parseDuration(input), {
    onNone: () => Result.fail(`expected milliseconds or a duration such as "2 seconds", got "${input}"`),
    onSome: (value) =>
      Duration.isGreaterThan(value, Duration.zero)
        ? Result.succeed(value)
        : Result.fail(`must be longer than zero, got "${input}"`)
  })

/** A positive duration read from its text (`parsePositiveDuration`), written back as milliseconds. */
export const PositiveDurationFromString = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Duration,
    SchemaTransformation.transformEffect({
      decode: (input, options) =>
        Result.match(parsePositiveDuration(input), {
          onSuccess: Effect.succeed,
          onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }, input, options))
        }),
      encode: (duration) => Effect.succeed(String(Duration.toMillis(duration)))
    })
  )
)

/** The environment variable `name` as a positive duration, `fallback` when unset; anything else stops the start. */
export const positiveDurationConfig = (name: string, fallback: Duration.Duration): Config.Config<Duration.Duration> =>
  Config.schema(PositiveDurationFromString, name).pipe(Config.withDefault(fallback))
