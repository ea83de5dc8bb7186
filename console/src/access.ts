import type { Scope } from "../../src/ingest/AdminScopes.js"

// What the logged-in token may do (REFERENCE §7c), as `/admin/keys/self` told it: the console shows only the actions its
// scopes allow. The server checks every call all the same; this only spares the operator buttons that would be refused.

export interface Self {
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  readonly sourceIds: ReadonlyArray<string> | null
}

const selfKey = "hookrelay.self"

let current: Self | null = null

const read = (): Self | null => {
  if (current !== null) return current
  const stored = sessionStorage.getItem(selfKey)
  current = stored === null ? null : JSON.parse(stored) as Self
  return current
}

export const access = {
  remember: (self: Self) => {
    current = self
    sessionStorage.setItem(selfKey, JSON.stringify(self))
  },
  forget: () => {
    current = null
    sessionStorage.removeItem(selfKey)
  },
  self: read,
  /** Whether the token has this scope (`admin` has every scope). */
  can: (scope: Scope): boolean => {
    const self = read()
    return self !== null && (self.scopes.includes("admin") || self.scopes.includes(scope))
  },
  /** Whether the token sees every source (routes over every source refuse a key limited to some). */
  everySource: (): boolean => read()?.sourceIds === null
}
