import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"

/** A positive duration as operators write it: milliseconds (`2000`) or Effect's form (`2 seconds`). */
export const parsePositiveDuration = (input: string): Either.Either<Duration.Duration, string> => {
  const text = input.trim()
  const duration = /^\d+$/.test(text) ? Option.some(Duration.millis(Number(text))) : Duration.decodeUnknown(text)
  return Option.match(duration, {
    onNone: () => Either.left(`expected milliseconds or a duration such as "2 seconds", got "${input}"`),
    onSome: (value) =>
      Duration.greaterThan(value, Duration.zero)
        ? Either.right(value)
        : Either.left(`must be longer than zero, got "${input}"`)
  })
}

/** The environment variable `name` as a positive duration, `fallback` when unset; anything else stops the start. */
export const positiveDurationConfig = (name: string, fallback: Duration.Duration): Config.Config<Duration.Duration> =>
  Config.string(name).pipe(
    Config.mapOrFail((input) =>
      Either.mapLeft(parsePositiveDuration(input), (message) => ConfigError.InvalidData([], message))
    ),
    Config.withDefault(fallback)
  )
