import { Config, Duration, Effect, Option, Redacted, Result, Schema, SchemaIssue, SchemaTransformation } from "effect"

/**
 * Environment of the store (REFERENCE §7): `DATABASE_URL` (a postgres:// URL selects PostgreSQL),
 * `HOOKRELAY_DATA_DIR` (the SQLite file lives there, default ./data), `HOOKRELAY_RETENTION` (how long
 * delivered jobs and their attempts are kept, default 7 days).
 */

export const defaultRetention = Duration.days(7)

/** Accepts a whole number of days (`7`) or an Effect duration (`36 hours`, `7 days`). */
export const parseRetention = (input: string): Result.Result<Duration.Duration, string> => {
  const text = input.trim()
  // `fromInput` takes any text and answers None for what is not `<number> <unit>`.
  const duration = /^\d+$/.test(text)
    ? Option.some(Duration.days(Number(text)))
    : Duration.fromInput(text as Duration.Input)
  return Option.match(duration, {
    onNone: () => Result.fail(`expected a number of days or a duration such as "7 days", got "${input}"`),
    onSome: (value) =>
      Duration.isGreaterThan(value, Duration.zero)
        ? Result.succeed(value)
        : Result.fail(`must be longer than zero, got "${input}"`)
  })
}

/** `HOOKRELAY_RETENTION`'s text as a duration (`parseRetention`); its failures are the config's errors. */
const RetentionFromString = Schema.String.pipe(Schema.decodeTo(
  Schema.Duration,
  SchemaTransformation.transformEffect({
    decode: (input) =>
      Result.match(parseRetention(input), {
        onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }, input)),
        onSuccess: Effect.succeed
      }),
    encode: (duration) => Effect.succeed(Duration.format(duration))
  })
))

export const retentionConfig: Config.Config<Duration.Duration> = Config.schema(
  RetentionFromString,
  "HOOKRELAY_RETENTION"
).pipe(Config.withDefault(defaultRetention))

export const dataDirectoryConfig: Config.Config<string> = Config.String("HOOKRELAY_DATA_DIR").pipe(
  Config.withDefault("./data")
)

export const isPostgresUrl = (url: string): boolean => /^postgres(?:ql)?:\/\//i.test(url.trim())

/** `DATABASE_URL` when it is a postgres:// URL; anything else (or nothing) means SQLite. */
export const postgresUrlConfig: Config.Config<Option.Option<Redacted.Redacted>> = Config.option(
  Config.Redacted("DATABASE_URL")
).pipe(Config.map(Option.filter((url) => isPostgresUrl(Redacted.value(url)))))
