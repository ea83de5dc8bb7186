import type {
  Backlog,
  EndpointHealthView,
  FieldIssue,
  JobView,
  MessageView,
  RecoveryResult,
  RotatedSecret,
  SourceInput,
  SourceView,
  Usage
} from "./types.js"

// The admin API as the console uses it (SPEC §7, §10, §11). Only these routes, only with the
// operator's bearer token, which lives in sessionStorage and never in a URL.

const tokenKey = "hookrelay.adminToken"

export const session = {
  token: (): string | null => sessionStorage.getItem(tokenKey),
  logIn: (token: string) => sessionStorage.setItem(tokenKey, token),
  logOut: () => sessionStorage.removeItem(tokenKey)
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

const request = async <A>(method: string, path: string, body?: unknown, token = session.token()): Promise<A> => {
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

const segment = encodeURIComponent

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") search.set(name, String(value))
  }
  const text = search.toString()
  return text === "" ? "" : `?${text}`
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
  /** Checks a token before keeping it: any admin call does. */
  checkToken: (token: string) => request<{ sources: Array<SourceView> }>("GET", "/admin/sources", undefined, token),
  sources: () => request<{ sources: Array<SourceView> }>("GET", "/admin/sources").then((body) => body.sources),
  source: (id: string) => request<SourceView>("GET", `/admin/sources/${segment(id)}`),
  putSource: (id: string, input: SourceInput) => request<SourceView>("PUT", `/admin/sources/${segment(id)}`, input),
  deleteSource: (id: string) => request<void>("DELETE", `/admin/sources/${segment(id)}`),
  rotateSecret: (id: string, keepOldFor: string) =>
    request<RotatedSecret>("POST", `/admin/sources/${segment(id)}/secrets/rotate`, { keepOldFor }),
  message: (messageId: string) => request<MessageView>("GET", `/admin/messages/${segment(messageId)}`),
  messagesOfUser: (userId: string, sourceId: string | undefined, limit = 50) =>
    request<{ messages: Array<MessageView> }>("GET", `/admin/messages${query({ userId, sourceId, limit })}`).then(
      (body) => body.messages
    ),
  deadLetters: (sourceId: string | undefined, limit = 100) =>
    request<{ deadLetters: Array<JobView> }>("GET", `/admin/dead-letters${query({ sourceId, limit })}`).then(
      (body) => body.deadLetters
    ),
  replay: (jobId: string) =>
    request<{ jobId: string; status: string }>("POST", `/admin/dead-letters/${segment(jobId)}/replay`),
  backlog: () => request<Backlog>("GET", "/admin/backlog"),
  openApi: () => request<OpenApiDocument>("GET", "/admin/openapi.json"),
  usage: (sourceId: string, days: number) =>
    request<Usage>("GET", `/admin/sources/${segment(sourceId)}/usage${query({ days })}`),
  endpoints: (sourceId: string) =>
    request<{ endpoints: Array<EndpointHealthView> }>("GET", `/admin/endpoints${query({ sourceId })}`).then(
      (body) => body.endpoints
    ),
  enableEndpoint: (url: string) => request<{ url: string; state: string }>("POST", "/admin/endpoints/enable", { url }),
  recover: (action: "replay" | "purge", filter: Record<string, unknown>) =>
    request<RecoveryResult>("POST", `/admin/dead-letters/${action}`, filter)
}
