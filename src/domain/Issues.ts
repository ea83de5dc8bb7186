import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** One reason an input was refused, with the dotted path of the offending field (`""` for the whole input). */
export interface FieldIssue {
  readonly path: string
  readonly message: string
}

export const FieldIssue = Schema.Struct({ path: Schema.String, message: Schema.String })

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((acc, key) => {
    if (typeof key === "number") return `${acc}[${key}]`
    const name = String(key)
    return acc === "" ? name : `${acc}.${name}`
  }, "")

/** Flattens a Schema parse error into field issues, one per leaf failure. */
export const issuesFromParseError = (error: ParseResult.ParseError): ReadonlyArray<FieldIssue> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
    path: formatPath(issue.path),
    message: issue.message
  }))

/** Decodes `input` with `schema`, reporting every failing field (not only the first). */
export const decodeWithIssues = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "preserve" })
  return (input: unknown): Either.Either<A, ReadonlyArray<FieldIssue>> =>
    Either.mapLeft(decode(input), issuesFromParseError)
}
