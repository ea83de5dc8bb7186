import type {
  FieldIssue,
  FilterRule,
  PropertyValue,
  SigningScheme,
  SourceInput,
  SourceView,
  WebhooksView
} from "../types.js"

// The source form's state, its translation to the admin API's body, and the placing of validation
// issues (the API's `errors[].path`, e.g. `webhooks.filters[1].if.type[0]`) next to the input they
// are about.

let nextKey = 1
const key = () => nextKey++

export interface HeaderRow {
  readonly key: number
  readonly name: string
  readonly value: string
  /** The value as the API showed it, masked: it must be entered again to save. */
  readonly masked?: string
}

export interface EndpointRow {
  readonly key: number
  readonly url: string
  readonly headers: ReadonlyArray<HeaderRow>
}

export type ValueKind = "text" | "number" | "boolean" | "null" | "json"

export interface PropertyRow {
  readonly key: number
  readonly path: string
  readonly kind: ValueKind
  readonly value: string
}

export interface EventRow {
  readonly key: number
  readonly name: string
}

export interface RuleRow {
  readonly key: number
  /** Message types, separated by commas. */
  readonly types: string
  readonly events: ReadonlyArray<EventRow>
  readonly properties: ReadonlyArray<PropertyRow>
}

export interface FormState {
  readonly id: string
  readonly writeKey: string
  readonly writeKeyMasked?: string
  readonly hasWebhooks: boolean
  readonly enabled: boolean
  readonly secretMode: "set" | "none"
  readonly secret: string
  readonly secretMasked?: string
  readonly endpoints: ReadonlyArray<EndpointRow>
  readonly rules: ReadonlyArray<RuleRow>
  /** Sent only once set (by the source or the operator): a source never given one keeps the default. */
  readonly signing?: SigningScheme
  readonly asymmetric?: boolean
}

export const replaceAt = <A>(list: ReadonlyArray<A>, index: number, f: (a: A) => A): Array<A> =>
  list.map((item, i) => (i === index ? f(item) : item))
export const removeAt = <A>(list: ReadonlyArray<A>, index: number): Array<A> => list.filter((_, i) => i !== index)

export const maxEndpoints = 5
export const messageTypes = ["track", "identify", "page", "screen", "group", "alias"] as const

export const emptyHeader = (): HeaderRow => ({ key: key(), name: "", value: "" })
export const emptyEndpoint = (): EndpointRow => ({ key: key(), url: "", headers: [] })
export const emptyEvent = (): EventRow => ({ key: key(), name: "" })
export const emptyProperty = (): PropertyRow => ({ key: key(), path: "", kind: "text", value: "" })
export const emptyRule = (): RuleRow => ({ key: key(), types: "", events: [], properties: [] })

export const newSourceForm = (): FormState => ({
  id: "",
  writeKey: "",
  hasWebhooks: true,
  enabled: true,
  secretMode: "set",
  secret: "",
  endpoints: [emptyEndpoint()],
  rules: []
})

// maskSecret (src/domain/Secrets.ts) shows "…" or the first four and last two characters around "…".
const looksMasked = (value: string) => value === "…" || /^[\s\S]{4}…[\s\S]{2}$/.test(value)

/** A destination's endpoints as form rows (one empty row when it has none); masked header values are asked again. */
export const endpointRows = (endpoints: WebhooksView["endpoints"]): ReadonlyArray<EndpointRow> =>
  endpoints.length === 0
    ? [emptyEndpoint()]
    : endpoints.map((endpoint) => ({
      key: key(),
      url: endpoint.url,
      headers: Object.entries(endpoint.headers ?? {}).map(([name, value]) =>
        looksMasked(value) ? { key: key(), name, value: "", masked: value } : { key: key(), name, value }
      )
    }))

/**
 * The endpoints of a body from form rows; a masked header value not entered again is an issue at
 * `{at}[e].headers.{name}` (`at` is where the list is in the body, such as `webhooks.endpoints`).
 */
export const endpointsInput = (
  rows: ReadonlyArray<EndpointRow>,
  at: string,
  issues: Array<FieldIssue>
): Array<{ readonly url: string; readonly headers?: Record<string, string> }> =>
  rows.map((endpoint, e) => {
    const headers: Record<string, string> = {}
    for (const header of endpoint.headers) {
      if (header.name === "" && header.value === "") continue
      if (header.masked !== undefined && header.value === "") {
        issues.push({
          path: `${at}[${e}].headers.${header.name}`,
          message: `enter this value again (the API shows it masked as ${header.masked})`
        })
      }
      headers[header.name] = header.value
    }
    return { url: endpoint.url.trim(), ...(Object.keys(headers).length > 0 && { headers }) }
  })

/** The form paths of endpoint rows whose list is at `at` in the body. */
export const endpointPaths = (rows: ReadonlyArray<EndpointRow>, at: string): Array<string> =>
  rows.flatMap((endpoint, e) => {
    const row = `${at}[${e}]`
    return [row, `${row}.url`, `${row}.headers`, ...endpoint.headers.map((header) => `${row}.headers.${header.name}`)]
  })

const kindOf = (value: PropertyValue): ValueKind =>
  value === null
    ? "null"
    : typeof value === "number"
    ? "number"
    : typeof value === "boolean"
    ? "boolean"
    : typeof value === "string"
    ? "text"
    : "json"

const textOf = (value: PropertyValue): string =>
  value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)

export const formFromSource = (source: SourceView): FormState => {
  const webhooks = source.webhooks
  return {
    id: source.id,
    writeKey: "",
    writeKeyMasked: source.writeKey,
    hasWebhooks: webhooks !== undefined,
    enabled: webhooks?.enabled ?? true,
    secretMode: webhooks === undefined || webhooks.hasSharedSecret ? "set" : "none",
    secret: "",
    ...(webhooks?.sharedSecret !== undefined && { secretMasked: webhooks.sharedSecret }),
    endpoints: endpointRows(webhooks?.endpoints ?? []),
    ...(webhooks?.signing !== undefined && { signing: webhooks.signing }),
    ...(webhooks?.asymmetric !== undefined && { asymmetric: webhooks.asymmetric }),
    rules: (webhooks?.filters ?? []).map((rule) => ({
      key: key(),
      types: (rule.if.type ?? []).join(", "),
      events: (rule.if.event ?? []).map((name) => ({ key: key(), name })),
      properties: Object.entries(rule.if.properties ?? {}).map(([path, value]) => ({
        key: key(),
        path,
        kind: kindOf(value),
        value: textOf(value)
      }))
    }))
  }
}

export const splitList = (text: string): Array<string> =>
  text.split(",").map((part) => part.trim()).filter((part) => part !== "")

type Checked = { readonly ok: PropertyValue } | { readonly problem: string }

const propertyValue = (row: PropertyRow): Checked => {
  switch (row.kind) {
    case "null":
      return { ok: null }
    case "boolean":
      return { ok: row.value === "true" }
    case "number": {
      const number = Number(row.value.trim())
      return row.value.trim() === "" || !Number.isFinite(number) ? { problem: "must be a number" } : { ok: number }
    }
    case "text":
      return { ok: row.value }
    case "json":
      try {
        return { ok: JSON.parse(row.value) as PropertyValue }
      } catch {
        return { problem: "must be JSON, such as {\"a\": 1} or [1, 2]" }
      }
  }
}

/**
 * The admin API body for this form, or the problems the console can see before asking the server
 * (values the API shows only masked must be entered again: PUT replaces the whole source).
 */
export const toInput = (
  form: FormState,
  isNew: boolean
): { readonly input: SourceInput; readonly issues: ReadonlyArray<FieldIssue> } => {
  const issues: Array<FieldIssue> = []
  if (isNew && form.id.trim() === "") issues.push({ path: "id", message: "enter an id for the source" })
  if (form.writeKey === "") {
    issues.push({
      path: "writeKey",
      message: isNew
        ? "enter a write key or generate one"
        : "enter the write key again (the API never shows it in full): the same key keeps clients working, a new one rotates it"
    })
  }
  if (!form.hasWebhooks) return { input: { writeKey: form.writeKey }, issues }

  if (form.secretMode === "set" && form.secret === "") {
    issues.push({
      path: "webhooks.sharedSecret",
      message: form.secretMasked === undefined
        ? "enter a shared secret or generate one (or choose no signature)"
        : "enter the current secret again to keep it, or a new one to rotate it (the API never shows it in full)"
    })
  }
  const endpoints = endpointsInput(form.endpoints, "webhooks.endpoints", issues)
  const filters: Array<FilterRule> = form.rules.map((rule, r) => {
    const types = splitList(rule.types)
    const events = rule.events.map((event) => event.name)
    const properties: Record<string, PropertyValue> = {}
    for (const row of rule.properties) {
      const value = propertyValue(row)
      if ("problem" in value) {
        issues.push({ path: `webhooks.filters[${r}].if.properties.${row.path}`, message: value.problem })
      } else {
        properties[row.path] = value.ok
      }
    }
    return {
      if: {
        ...(types.length > 0 && { type: types }),
        ...(events.length > 0 && { event: events }),
        ...(rule.properties.length > 0 && { properties })
      },
      then: "drop"
    }
  })
  return {
    input: {
      writeKey: form.writeKey,
      webhooks: {
        enabled: form.enabled,
        ...(form.secretMode === "set" && { sharedSecret: form.secret }),
        endpoints,
        ...(filters.length > 0 && { filters }),
        // Signing secrets and keys are never sent back: the server keeps the ones a PUT leaves out.
        ...(form.signing !== undefined && { signing: form.signing }),
        ...(form.asymmetric !== undefined && { asymmetric: form.asymmetric })
      }
    },
    issues
  }
}

/** Every place of the form an issue can be shown at, most specific last is not required. */
export const fieldPaths = (form: FormState): Array<string> => {
  const paths = [
    "id",
    "writeKey",
    "webhooks",
    "webhooks.enabled",
    "webhooks.sharedSecret",
    "webhooks.signing",
    "webhooks.asymmetric",
    "webhooks.endpoints"
  ]
  paths.push(...endpointPaths(form.endpoints, "webhooks.endpoints"))
  paths.push("webhooks.filters")
  form.rules.forEach((rule, r) => {
    const at = `webhooks.filters[${r}]`
    paths.push(at, `${at}.if`, `${at}.then`, `${at}.if.type`, `${at}.if.event`, `${at}.if.properties`)
    rule.events.forEach((_, v) => paths.push(`${at}.if.event[${v}]`))
    for (const row of rule.properties) paths.push(`${at}.if.properties.${row.path}`)
  })
  return paths
}

const within = (path: string, prefix: string) =>
  path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`)

/** Issues by the form path they are shown at: the longest path that contains them; "" for the form. */
export const placeIssues = (
  issues: ReadonlyArray<FieldIssue>,
  paths: ReadonlyArray<string>
): ReadonlyMap<string, ReadonlyArray<FieldIssue>> => {
  const placed = new Map<string, Array<FieldIssue>>()
  for (const issue of issues) {
    let best = ""
    for (const path of paths) {
      if (path.length > best.length && within(issue.path, path)) best = path
    }
    const list = placed.get(best) ?? []
    list.push(issue)
    placed.set(best, list)
  }
  return placed
}

/** A random secret for a write key or shared secret: 32 bytes, base64url. */
export const randomSecret = (): string => {
  const bytes = crypto.getRandomValues(new Uint8Array(32))
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
}
