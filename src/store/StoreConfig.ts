import { Config, ConfigError, Duration, Either, Option, Redacted } from "effect"

/**
 * Environment of the store (SPEC §7): `DATABASE_URL` (a postgres:// URL selects PostgreSQL),
 * `HOOKRELAY_DATA_DIR` (the SQLite file lives there, default ./data), `HOOKRELAY_RETENTION` (how long
 * delivered jobs and their attempts are kept, default 7 days).
 */

export const defaultRetention = Duration.days(7)

/** Accepts a whole number of days (`7`) or an Effect duration (`36 hours`, `7 days`). */
export const parseRetention = (input: string): Either.Either<Duration.Duration, string> => {
  const text = input.trim()
  const duration = /^\d+$/.test(text) ? Option.some(Duration.days(Number(text))) : Duration.decodeUnknown(text)
  return Option.match(duration, {
    onNone: () => Either.left(`expected a number of days or a duration such as "7 days", got "${input}"`),
    onSome: (value) =>
      Duration.greaterThan(value, Duration.zero)
        ? Either.right(value)
        : Either.left(`must be longer than zero, got "${input}"`)
  })
}

export const retentionConfig: Config.Config<Duration.Duration> = Config.string("HOOKRELAY_RETENTION").pipe(
  Config.mapOrFail((input) => Either.mapLeft(parseRetention(input), (message) => ConfigError.InvalidData([], message))),
  Config.withDefault(defaultRetention)
)

export const dataDirectoryConfig: Config.Config<string> = Config.string("HOOKRELAY_DATA_DIR").pipe(
  Config.withDefault("./data")
)

export const isPostgresUrl = (url: string): boolean => /^postgres(?:ql)?:\/\//i.test(url.trim())

/** `DATABASE_URL` when it is a postgres:// URL; anything else (or nothing) means SQLite. */
export const postgresUrlConfig: Config.Config<Option.Option<Redacted.Redacted>> = Config.option(
  Config.redacted("DATABASE_URL")
).pipe(Config.map(Option.filter((url) => isPostgresUrl(Redacted.value(url)))))
