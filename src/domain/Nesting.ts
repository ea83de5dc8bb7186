/**
 * The first top-level field of `message` whose value nests objects or arrays more than `limit` levels deep (the
 * field's own value is level 1), or `undefined`. Iterative, so any depth is walked without using the stack; only
 * objects and arrays are visited, which an analytics message has few of.
 */
export const fieldNestedBeyond = (message: Readonly<Record<string, unknown>>, limit: number): string | undefined => {
  for (const field of Object.keys(message)) {
    const pending: Array<unknown> = []
    const depths: Array<number> = []
    const top = message[field]
    if (typeof top === "object" && top !== null) {
      pending.push(top)
      depths.push(1)
    }
    while (pending.length > 0) {
      const value = pending.pop() as object
      const depth = depths.pop()!
      if (depth > limit) return field
      for (const child of Object.values(value)) {
        if (typeof child === "object" && child !== null) {
          pending.push(child)
          depths.push(depth + 1)
        }
      }
    }
  }
  return undefined
}
