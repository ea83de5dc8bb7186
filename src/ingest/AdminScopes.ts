import { Context, Schema } from "effect"
import { OpenApi } from "effect/http-api"

/**
 * The scopes of admin API keys (REFERENCE §7c), and the one place a route says which it needs: `requires(scope)` is
 * an annotation on the route's endpoint in `AdminContract`, read by the bearer middleware (`AdminAuth`) and written
 * into the OpenAPI document (the operation's security requirement names the scope as its role, and
 * `x-hookrelay-scope`).
 */

export const scopes = ["admin", "sources:read", "sources:write", "messages:read", "replay", "privacy"] as const

export type Scope = typeof scopes[number]

export const ScopeName = Schema.Literals(scopes).annotate({ identifier: "Scope" })

/** What a route needs: a scope, or only a valid key (`any`: a key asking about itself). */
export type RouteScope = Scope | "any"

/** The scope an endpoint needs. An endpoint without one needs `admin`. */
export class RequiredScope extends Context.Service<RequiredScope, RouteScope>()("hookrelay/admin/RequiredScope") {}

/** The endpoint spans every source: a key limited to some sources is refused (403). */
export class SpansAllSources extends Context.Service<SpansAllSources, boolean>()("hookrelay/admin/SpansAllSources") {}

type Operation = Record<string, unknown> & { readonly security?: ReadonlyArray<Record<string, Array<string>>> }

/** The annotations of a route that needs `scope`: for `.annotateMerge` on its endpoint. */
export const requires = (scope: RouteScope, options: { readonly allSources?: boolean } = {}) =>
  Context.make(RequiredScope, scope).pipe(
    Context.add(SpansAllSources, options.allSources === true),
    Context.add(OpenApi.Transform, (operation: Operation) => ({
      ...operation,
      security: (operation.security ?? []).map((requirement) =>
        Object.fromEntries(Object.keys(requirement).map((name) => [name, scope === "any" ? [] : [scope]]))
      ),
      "x-hookrelay-scope": scope === "any" ? null : scope,
      description: [
        typeof operation.description === "string" ? operation.description : "",
        scope === "any" ? "Any valid key." : `Needs scope \`${scope}\` (or \`admin\`).`,
        options.allSources === true ? "Not for a key limited to sources." : ""
      ].filter((part) => part !== "").join(" ")
    }))
  )

/** Who is calling: the bootstrap token or a key, with what it may do. */
export interface Caller {
  /** `null` for the bootstrap token (HOOKRELAY_ADMIN_TOKEN). */
  readonly keyId: string | null
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  /** `null`: every source. */
  readonly sourceIds: ReadonlyArray<string> | null
}

export const bootstrapCaller: Caller = { keyId: null, name: "admin token", scopes: ["admin"], sourceIds: null }

/** The caller of the admin request being handled, provided by the bearer middleware. */
export class AdminCaller extends Context.Service<AdminCaller, Caller>()("hookrelay/admin/AdminCaller") {}

export const hasScope = (caller: Caller, scope: RouteScope): boolean =>
  scope === "any" || caller.scopes.includes("admin") || caller.scopes.includes(scope)

/** Whether the caller may see this source. */
export const seesSource = (caller: Caller, sourceId: string): boolean =>
  caller.sourceIds === null || caller.sourceIds.includes(sourceId)
