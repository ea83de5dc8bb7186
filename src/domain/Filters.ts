import * as Schema from "effect/Schema"
import { isMessageType, type Message, messageTypes } from "./Message.js"

/**
 * Destination filters (REFERENCE §10): rules `{"if": {type?, event?, properties?}, "then": "drop"}`
 * kept with a source's webhook settings. A message that meets every condition of some rule is
 * accepted and counted but not delivered.
 */

/** Rules per destination. */
export const maxFilterRules = 50
/** Values in one `type` or `event` list. */
export const maxConditionValues = 100
/** Property paths in one rule. */
export const maxPropertyConditions = 20
export const maxEventLength = 1024
export const maxPropertyPathLength = 256
/** A property value to compare with, as JSON. */
export const maxPropertyValueBytes = 4096

const conditionNames = ["type", "event", "properties"] as const
const ruleFields = ["if", "then"] as const

/**
 * Each listed key must be one of `known`: a misspelt condition (`evnt`) must not silently widen a rule. Its refusal
 * is the only one: the checks after it would only repeat it (a rule of a misspelt condition has no condition left).
 */
const onlyKnownKeys = (known: ReadonlyArray<string>, what: string) =>
  Schema.makeFilter((value: object) => {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) return { path: [key], issue: `is not ${what}: use ${known.join(", ")}` }
    }
    return true
  }).abort()

const list = <S extends Schema.Top>(item: S) =>
  Schema.Array(item).check(
    Schema.makeFilter((items) =>
      (items.length >= 1 && items.length <= maxConditionValues) ||
      `must hold 1 to ${maxConditionValues} values (got ${items.length})`
    )
  )

// A string, then one of the types: a value that is not a string is told so, a misspelt type the names to use.
const FilterType = Schema.String.annotate({ message: "must be a string" }).check(
  Schema.makeFilter(isMessageType, { message: `must be one of ${messageTypes.join(", ")}` })
)

const FilterEvent = Schema.String.annotate({ message: "must be a string" }).check(
  Schema.makeFilter((event) =>
    (event.length >= 1 && event.length <= maxEventLength) || `must be 1 to ${maxEventLength} characters`
  )
)

const pathProblem = (path: string): string | undefined => {
  if (path.length === 0 || path.length > maxPropertyPathLength) {
    return `must be a property path of 1 to ${maxPropertyPathLength} characters`
  }
  if (path.split(".").some((segment) => segment === "")) {
    return "must be property names joined by '.' (no empty name)"
  }
  return undefined
}

const valueProblem = (value: unknown): string | undefined => {
  const json = JSON.stringify(value) as string | undefined
  if (json === undefined) return "must be a JSON value"
  if (Buffer.byteLength(json, "utf8") > maxPropertyValueBytes) {
    return `must be at most ${maxPropertyValueBytes} bytes as JSON`
  }
  return undefined
}

// A Record's key schema silently skips keys that fail it, so paths are checked on the whole record.
const PropertyConditions = Schema.Record(Schema.String, Schema.Unknown).check(
  Schema.makeFilter((conditions) => {
    const paths = Object.keys(conditions)
    if (paths.length < 1 || paths.length > maxPropertyConditions) {
      return `must hold 1 to ${maxPropertyConditions} property paths (got ${paths.length})`
    }
    for (const path of paths) {
      const problem = pathProblem(path) ?? valueProblem(conditions[path])
      if (problem !== undefined) return { path: [path], issue: problem }
    }
    return true
  })
)

// Other keys are decoded too (not dropped), so that `onlyKnownKeys` sees and refuses them.
const otherKeys = [Schema.Record(Schema.String, Schema.Unknown)] as const

/** The `if` of a rule: every condition given must hold. */
export const FilterCondition = Schema.StructWithRest(
  Schema.Struct({
    type: Schema.optionalKey(list(FilterType)),
    event: Schema.optionalKey(list(FilterEvent)),
    properties: Schema.optionalKey(PropertyConditions)
  }),
  otherKeys
).check(
  onlyKnownKeys(conditionNames, "a condition"),
  Schema.makeFilter((condition) =>
    conditionNames.some((name) => condition[name] !== undefined) ||
    "must hold at least one condition (type, event or properties); to deliver nothing, set enabled to false"
  )
)
export type FilterCondition = typeof FilterCondition.Type

export const FilterRule = Schema.StructWithRest(
  Schema.Struct({
    if: FilterCondition,
    then: Schema.Literal("drop").annotate({ message: "must be \"drop\"" })
  }),
  otherKeys
).check(onlyKnownKeys(ruleFields, "a rule field"))
export type FilterRule = typeof FilterRule.Type

export const Filters = Schema.Array(FilterRule).check(
  Schema.makeFilter((rules) =>
    rules.length <= maxFilterRules || `must hold at most ${maxFilterRules} rules (got ${rules.length})`
  )
)
export type Filters = typeof Filters.Type

// --- matching ------------------------------------------------------------------------------------

/** Deep equality of JSON values: same primitives, same array items in order, same object keys and values. */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    return a.every((item, i) => jsonEqual(item, b[i]))
  }
  if (Array.isArray(b)) return false
  const left = a as Record<string, unknown>
  const right = b as Record<string, unknown>
  const keys = Object.keys(left)
  if (keys.length !== Object.keys(right).length) return false
  return keys.every((key) => Object.hasOwn(right, key) && jsonEqual(left[key], right[key]))
}

const missing = Symbol("missing")

/** The value at `a.b.c` inside `root`, through plain objects only; `missing` when any step is absent. */
const valueAt = (root: unknown, path: ReadonlyArray<string>): unknown => {
  let current = root
  for (const name of path) {
    if (typeof current !== "object" || current === null || Array.isArray(current)) return missing
    if (!Object.hasOwn(current, name)) return missing
    current = (current as Record<string, unknown>)[name]
  }
  return current
}

interface CompiledRule {
  readonly types: ReadonlySet<string> | undefined
  readonly events: ReadonlySet<string> | undefined
  readonly properties: ReadonlyArray<readonly [path: ReadonlyArray<string>, value: unknown]>
}

const compile = (rule: FilterRule): CompiledRule => ({
  types: rule.if.type === undefined ? undefined : new Set(rule.if.type),
  events: rule.if.event === undefined ? undefined : new Set(rule.if.event),
  properties: Object.entries(rule.if.properties ?? {}).map(([path, value]) => [path.split("."), value] as const)
})

// Settings are immutable values read from the source cache: compile each list once.
const compiled = new WeakMap<Filters, ReadonlyArray<CompiledRule>>()

const compiledRules = (filters: Filters): ReadonlyArray<CompiledRule> => {
  let rules = compiled.get(filters)
  if (rules === undefined) {
    rules = filters.map(compile)
    compiled.set(filters, rules)
  }
  return rules
}

const matches = (rule: CompiledRule, message: Message): boolean => {
  if (rule.types !== undefined && !rule.types.has(message.type)) return false
  if (rule.events !== undefined) {
    const event = message.event
    if (typeof event !== "string" || !rule.events.has(event)) return false
  }
  if (rule.properties.length > 0) {
    const properties = message.properties
    for (const [path, value] of rule.properties) {
      const found = valueAt(properties, path)
      if (found === missing || !jsonEqual(found, value)) return false
    }
  }
  return true
}

/**
 * Whether a rule drops this message: `type` is in the rule's list, `event` (a string field; a
 * message without one never matches an event condition) is in its list, and each property path,
 * read inside `properties` through nested objects, is present and deeply equal to its value.
 */
export const dropsMessage = (filters: Filters | undefined, message: Message): boolean => {
  if (filters === undefined || filters.length === 0) return false
  for (const rule of compiledRules(filters)) {
    if (matches(rule, message)) return true
  }
  return false
}
