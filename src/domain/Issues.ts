import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"

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

/**
 * The texts of refusals no schema annotates, in the words the API has always answered with: Schema 4 says
 * "Missing key" and "Expected string, got 3"; clients read "is missing" and "Expected string, actual 3".
 */
const leafHook: SchemaIssue.LeafHook = (issue) =>
  issue._tag === "MissingKey"
    ? issue.annotations?.messageMissingKey ?? "is missing"
    : SchemaIssue.defaultLeafHook(issue)

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook })

// Schema's own "what it expected, what it got" (a type, a built-in check, a union no member of which applies).
const expectedGot = /^(Expected [\s\S]+), got ([\s\S]+)$/

const inOurWords = (message: string) => message.replace(expectedGot, "$1, actual $2")

/** Flattens a Schema issue (or the `SchemaError` that carries one) into field issues, one per leaf failure. */
export const issuesFromParseError = (error: Schema.SchemaError | SchemaIssue.Issue): ReadonlyArray<FieldIssue> =>
  formatter(Schema.isSchemaError(error) ? error.issue : error).issues.map((issue) => ({
    path: formatPath((issue.path ?? []).map((key) => typeof key === "object" ? key.key : key)),
    message: inOurWords(issue.message)
  }))

/** How every boundary decodes: every failing field (not only the first), with the refused value in its text. */
export const parseOptions = { errors: "all", reportInput: true } as const

/** Decodes `input` with `schema`, reporting every failing field (not only the first). */
export const decodeWithIssues = <A, I = unknown>(schema: Schema.Codec<A, I, never, unknown>) => {
  const decode = SchemaParser.decodeUnknownResult(schema, parseOptions)
  return (input: unknown): Result.Result<A, ReadonlyArray<FieldIssue>> =>
    Result.mapError(decode(input), issuesFromParseError)
}
