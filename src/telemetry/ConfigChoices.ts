import { Config, Schema } from "effect"

/**
 * The variable `name` read by `base`, refused with `message` when `valid` says no. The error names the variable and
 * says the one line (`must be …`), where Schema's own message would list every alternative.
 */
export const checked = <A>(
  name: string,
  base: Schema.Codec<A, string>,
  valid: (value: A) => boolean,
  message: string
): Config.Config<A> => Config.schema(base.check(Schema.makeFilter(valid, { message })), name)

/** A whole number of at least 1 (a count, or milliseconds). */
export const atLeastOne = (name: string): Config.Config<number> =>
  checked(name, Schema.NumberFromString, (n) => Number.isInteger(n) && n >= 1, "must be a whole number of at least 1")

/**
 * A variable holding one of `names` (in any case). A wrong value fails the start with `must be one of …` at the
 * variable's name.
 */
export const oneOf = <const Names extends ReadonlyArray<string>>(
  name: string,
  names: Names
): Config.Config<Names[number]> => {
  const normal = (value: string) => value.trim().toLowerCase()
  return checked(name, Schema.String, (value) => names.includes(normal(value)), `must be one of ${names.join(", ")}`)
    .pipe(Config.map((value) => normal(value) as Names[number]))
}

/** `oneOf`, `fallback` when unset. */
export const oneOfConfig = <const Names extends ReadonlyArray<string>>(
  name: string,
  names: Names,
  fallback: Names[number]
): Config.Config<Names[number]> => Config.withDefault(oneOf(name, names), fallback)
