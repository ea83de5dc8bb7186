import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"

/**
 * A duration as operators write it: milliseconds (`2000`) or Effect's form (`2 seconds`), finite and not negative
 * (Duration would clamp a negative amount to zero; it is refused instead).
 */
export const parseDuration = (input: string): Option.Option<Duration.Duration> => {
  const text = input.trim()
  if (text.startsWith("-")) return Option.none()
  const duration = /^\d+$/.test(text) ? Option.some(Duration.millis(Number(text))) : Duration.decodeUnknown(text)
  return Option.filter(duration, Duration.isFinite)
}

/** A positive duration as operators write it (`parseDuration`), or why it is not one. */
export const parsePositiveDuration = (input: string): Either.Either<Duration.Duration, string> =>
  Option.match(parseDuration(input), {
    onNone: () => Either.left(`expected milliseconds or a duration such as "2 seconds", got "${input}"`),
    onSome: (value) =>
      Duration.greaterThan(value, Duration.zero)
        ? Either.right(value)
        : Either.left(`must be longer than zero, got "${input}"`)
  })

/** The environment variable `name` as a positive duration, `fallback` when unset; anything else stops the start. */
export const positiveDurationConfig = (name: string, fallback: Duration.Duration): Config.Config<Duration.Duration> =>
  Config.string(name).pipe(
    Config.mapOrFail((input) =>
      Either.mapLeft(parsePositiveDuration(input), (message) => ConfigError.InvalidData([], message))
    ),
    Config.withDefault(fallback)
  )
