import { access } from "./access.js"
import { type CallName, calls, type Wires } from "./calls.js"
import type { PathOf, QueryOf } from "./contract.js"
import type { DestinationInput, EndpointKey, FieldIssue, RecoveryFilter, SourceInput } from "./types.js"

// The admin API as the console uses it (REFERENCE §1a, §7, §7c, §10, §11). Only these routes, only with the
// operator's bearer token (the admin token or an API key), which lives in sessionStorage and never in a URL.

const tokenKey = "hookrelay.adminToken"

export const session = {
  token: (): string | null => sessionStorage.getItem(tokenKey),
  logIn: (token: string) => sessionStorage.setItem(tokenKey, token),
  logOut: () => {
    sessionStorage.removeItem(tokenKey)
    access.forget()
  }
}

/** An answer other than 2xx: the error body of every hookrelay endpoint (src/ingest/ErrorBody.ts). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly errors: ReadonlyArray<FieldIssue>
  ) {
    super(message)
  }
}

/** Called on any 401: the token is dropped and the console goes back to the login page. */
let onUnauthorized: () => void = () => {}
export const setUnauthorizedHandler = (handler: () => void) => {
  onUnauthorized = handler
}

const send = async <A>(method: string, path: string, body: unknown, token: string | null): Promise<A> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      credentials: "omit",
      ...(body !== undefined && { body: JSON.stringify(body) })
    })
  } catch {
    throw new ApiError(0, "unreachable", "The server cannot be reached.", [])
  }
  const text = await response.text()
  let parsed: unknown = undefined
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    parsed = undefined
  }
  if (response.ok) return parsed as A
  const error = (parsed ?? {}) as { code?: unknown; message?: unknown; errors?: unknown }
  const failure = new ApiError(
    response.status,
    typeof error.code === "string" ? error.code : "http_error",
    typeof error.message === "string" ? error.message : `HTTP ${response.status}`,
    Array.isArray(error.errors) ? (error.errors as Array<FieldIssue>) : []
  )
  if (response.status === 401) {
    session.logOut()
    onUnauthorized()
  }
  throw failure
}

/** A call's query string; a parameter with several values is repeated. */
const query = (params: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    for (const item of typeof value === "string" ? [value] : value ?? []) {
      if (item !== "") search.append(name, item)
    }
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

/** A call's path parameters, query and body, each only when its endpoint has them. */
type Request<N extends CallName> =
  & ([PathOf<N>] extends [never] ? {} : { readonly path: PathOf<N> })
  & ([QueryOf<N>] extends [never] ? {} : { readonly query: QueryOf<N> })
  & (Wires[N] extends { readonly body: infer B } ? { readonly body: B } : {})

interface AnyRequest {
  readonly path?: Readonly<Record<string, string>>
  readonly query?: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body?: unknown
}

/** Calls the endpoint by its contract name: its method and path (`:name` filled in, encoded) from `calls`. */
const call = <N extends CallName>(name: N, request: Request<N>, token = session.token()) => {
  const { body, path = {}, query: params = {} } = request as AnyRequest
  const route = calls[name]
  const url = route.path.replace(/:(\w+)/g, (_, key: string) => encodeURIComponent(path[key] ?? ""))
  return send<Wires[N]["answer"]>(route.method, url + query(params), body, token)
}

/** The parts of the OpenAPI document the reference page shows. */
export interface OpenApiOperation {
  readonly operationId: string
  readonly tags?: ReadonlyArray<string>
  readonly description?: string
  readonly parameters?: ReadonlyArray<
    { readonly name: string; readonly in: string; readonly required?: boolean; readonly description?: string }
  >
  readonly requestBody?: { readonly content: Record<string, { readonly schema: unknown }> }
  readonly responses: Record<
    string,
    { readonly description: string; readonly content?: Record<string, { readonly schema: unknown }> }
  >
}
export interface OpenApiDocument {
  readonly info: { readonly title: string; readonly version: string; readonly description?: string }
  readonly tags: ReadonlyArray<{ readonly name: string }>
  readonly paths: Record<string, Record<string, OpenApiOperation>>
  readonly components: { readonly schemas: Record<string, unknown> }
}

export const api = {
  /** Checks a token before keeping it, and says what it may do: every valid key may ask about itself. */
  self: (token = session.token()) => call("keySelf", {}, token),
  sources: () => call("listSources", {}).then((answer) => answer.sources),
  source: (sourceId: string) => call("getSource", { path: { sourceId } }),
  putSource: (sourceId: string, input: SourceInput) => call("putSource", { path: { sourceId }, body: input }),
  deleteSource: (sourceId: string) => call("deleteSource", { path: { sourceId } }),
  rotateSecret: (sourceId: string, keepOldFor: string) =>
    call("rotateSecret", { path: { sourceId }, body: { keepOldFor } }),
  destinations: (sourceId: string) =>
    call("listDestinations", { path: { sourceId } }).then((answer) => answer.destinations),
  putDestination: (sourceId: string, destinationId: string, input: DestinationInput) =>
    call("putDestination", { path: { sourceId, destinationId }, body: input }),
  deleteDestination: (sourceId: string, destinationId: string) =>
    call("deleteDestination", { path: { sourceId, destinationId } }),
  rotateDestinationSecret: (sourceId: string, destinationId: string, keepOldFor: string) =>
    call("rotateDestinationSecret", { path: { sourceId, destinationId }, body: { keepOldFor } }),
  message: (messageId: string) => call("getMessage", { path: { messageId } }),
  /** A page of the message log: the query's filters (`messageLog.ts`), from the cursor `after` (none: the newest). */
  messageLog: (filters: QueryOf<"listMessages">) => call("listMessages", { query: filters }),
  deadLetters: (sourceId: string | undefined, limit = 100) =>
    call("listDeadLetters", { query: { sourceId, limit: String(limit) } }).then((answer) => answer.deadLetters),
  replay: (jobId: string) => call("replayDeadLetter", { path: { jobId } }),
  backlog: () => call("backlog", {}),
  // The contract says only "an object": what the reference page reads of it is OpenAPI's shape.
  openApi: () => call("openApi", {}) as Promise<OpenApiDocument>,
  /** A source's usage by day; with a destination, its jobs' counters (delivered, dead, latency) are that one's. */
  usage: (sourceId: string, days: number, destinationId?: string) =>
    call("sourceUsage", { path: { sourceId }, query: { days: String(days), destinationId } }),
  /** The health of a source's endpoints: every destination's, or one destination's. */
  endpoints: (sourceId: string, destinationId?: string) =>
    call("listEndpoints", { query: { sourceId, destinationId } }).then((answer) => answer.endpoints),
  enableEndpoint: (endpoint: EndpointKey) => call("enableEndpoint", { body: endpoint }),
  recover: (action: "replay" | "purge", filter: RecoveryFilter) =>
    call(action === "replay" ? "replayDeadLetters" : "purgeDeadLetters", { body: filter })
}
