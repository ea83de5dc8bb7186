/**
 * Object copies for hot paths. V8 promotes objects built by a spread that goes on with more
 * properties (`{ ...a, ...b }`, `{ ...a, key: value }`) to the old generation, dead or alive
 * (where `Object.assign` leaves them young), and old-generation garbage is what grows a busy
 * process's memory.
 *
 * `Object.assign` sets a `__proto__` key through the prototype setter, where a spread copies it as
 * data; `JSON.parse` makes such keys, so input that has one is copied the spread's way.
 */

const hasProtoKey = (value: object): boolean => Object.prototype.hasOwnProperty.call(value, "__proto__")

/** `{ ...source }`. */
export const copyFields = <A extends object>(source: A): A =>
  hasProtoKey(source) ? { ...source } : Object.assign({}, source)

/** `{ ...first, ...second }`. */
export const mergeFields = <A extends object, B extends object>(first: A, second: B): A & B =>
  hasProtoKey(first) || hasProtoKey(second) ? { ...first, ...second } : Object.assign({}, first, second)

/** `{ ...source, [key]: value }`, for a key of the program's own (never `__proto__`). */
export const copyWith = <A extends object, K extends string, V>(
  source: A,
  key: K,
  value: V
): Omit<A, K> & { [P in K]: V } => {
  const copy = copyFields(source) as Record<string, unknown>
  copy[key] = value
  return copy as Omit<A, K> & { [P in K]: V }
}
