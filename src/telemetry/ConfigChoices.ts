import { Config, Schema } from "effect"

/**
 * A variable holding one of `names` (in any case). A wrong value fails the start with
 * `Invalid data at NAME: "must be one of …"`: one line, where Schema's own message is a tree of every alternative.
 */
export const oneOf = <const Names extends ReadonlyArray<string>>(
  name: string,
  names: Names
): Config.Config<Names[number]> => {
  const isName = Schema.is(Schema.Literal(...names))
  // Validated before it is nested under its name, so that the error says which variable it is.
  const value = Config.string().pipe(
    Config.map((value) => value.trim().toLowerCase()),
    Config.validate({ message: `must be one of ${names.join(", ")}`, validation: isName })
  )
  return Config.nested(value, name)
}

/** `oneOf`, `fallback` when unset. */
export const oneOfConfig = <const Names extends ReadonlyArray<string>>(
  name: string,
  names: Names,
  fallback: Names[number]
): Config.Config<Names[number]> => Config.withDefault(oneOf(name, names), fallback)
