import type { DestinationInput, DestinationView, FieldIssue, SigningScheme } from "../types.js"
import type { EndpointRow } from "./sourceForm.js"
import { endpointPaths, endpointRows, endpointsInput, messageTypes } from "./sourceForm.js"

// A destination's form (REFERENCE §1a), its body for `PUT /admin/sources/{id}/destinations/{destinationId}`, and the
// form paths the server's issues are placed at: they name the body's fields (`subscribe.events[0]`), and the path's
// id as `destinationId`.

export type MessageType = (typeof messageTypes)[number]

export interface DestinationForm {
  readonly id: string
  readonly name: string
  readonly enabled: boolean
  readonly secretMode: "set" | "none"
  readonly secret: string
  readonly secretMasked?: string
  readonly endpoints: ReadonlyArray<EndpointRow>
  /** Subscribed types; none checked: every type. */
  readonly types: ReadonlyArray<MessageType>
  /** Subscribed track events, one a line; empty: every event. */
  readonly events: string
  /** Empty: the default (4 hours, 5 seconds). */
  readonly retryWindow: string
  readonly timeout: string
  /** The drop rules as JSON (REFERENCE §10); empty: none. */
  readonly filters: string
  readonly signing?: SigningScheme
  readonly asymmetric?: boolean
}

export const newDestinationForm = (): DestinationForm => ({
  id: "",
  name: "",
  enabled: true,
  secretMode: "set",
  secret: "",
  endpoints: endpointRows([]),
  types: [],
  events: "",
  retryWindow: "",
  timeout: "",
  filters: ""
})

const isMessageType = (type: string): type is MessageType => (messageTypes as ReadonlyArray<string>).includes(type)

export const formFromDestination = (destination: DestinationView): DestinationForm => ({
  id: destination.id,
  name: destination.name ?? "",
  enabled: destination.enabled,
  secretMode: destination.hasSharedSecret ? "set" : "none",
  secret: "",
  ...(destination.sharedSecret !== undefined && { secretMasked: destination.sharedSecret }),
  endpoints: endpointRows(destination.endpoints),
  types: (destination.subscribe?.types ?? []).filter(isMessageType),
  events: (destination.subscribe?.events ?? []).join("\n"),
  retryWindow: destination.retryWindow ?? "",
  timeout: destination.timeout ?? "",
  filters: destination.filters === undefined ? "" : JSON.stringify(destination.filters, null, 2),
  ...(destination.signing !== undefined && { signing: destination.signing }),
  ...(destination.asymmetric !== undefined && { asymmetric: destination.asymmetric })
})

const lines = (text: string) => text.split("\n").map((line) => line.trim()).filter((line) => line !== "")

/**
 * The body for this form, or the problems the console sees before asking the server (values the API shows only
 * masked must be entered again: a PUT replaces the whole destination).
 */
export const destinationInput = (
  form: DestinationForm,
  isNew: boolean
): { readonly input: DestinationInput; readonly issues: ReadonlyArray<FieldIssue> } => {
  const issues: Array<FieldIssue> = []
  if (isNew && form.id.trim() === "") issues.push({ path: "destinationId", message: "enter an id for the destination" })
  if (form.secretMode === "set" && form.secret === "") {
    issues.push({
      path: "sharedSecret",
      message: form.secretMasked === undefined
        ? "enter a shared secret or generate one (or choose no signature)"
        : "enter the current secret again to keep it, or a new one to rotate it (the API never shows it in full)"
    })
  }
  const endpoints = endpointsInput(form.endpoints, "endpoints", issues)
  let filters: DestinationInput["filters"] = undefined
  if (form.filters.trim() !== "") {
    try {
      filters = JSON.parse(form.filters) as DestinationInput["filters"]
    } catch {
      issues.push({
        path: "filters",
        message: "must be JSON: a list of rules such as [{\"if\": {...}, \"then\": \"drop\"}]"
      })
    }
  }
  const events = lines(form.events)
  const subscribe = {
    ...(form.types.length > 0 && { types: [...form.types] }),
    ...(events.length > 0 && { events })
  }
  return {
    input: {
      enabled: form.enabled,
      ...(form.name.trim() !== "" && { name: form.name.trim() }),
      ...(form.secretMode === "set" && { sharedSecret: form.secret }),
      endpoints,
      ...(filters !== undefined && { filters }),
      ...(Object.keys(subscribe).length > 0 && { subscribe }),
      ...(form.retryWindow.trim() !== "" && { retryWindow: form.retryWindow.trim() }),
      ...(form.timeout.trim() !== "" && { timeout: form.timeout.trim() }),
      // Signing secrets and keys are never sent back: the server keeps the ones a PUT leaves out.
      ...(form.signing !== undefined && { signing: form.signing }),
      ...(form.asymmetric !== undefined && { asymmetric: form.asymmetric })
    },
    issues
  }
}

/** Every place of the destination form an issue can be shown at. */
export const destinationPaths = (form: DestinationForm): Array<string> => [
  "destinationId",
  "name",
  "enabled",
  "sharedSecret",
  "signing",
  "asymmetric",
  "endpoints",
  ...endpointPaths(form.endpoints, "endpoints"),
  "subscribe",
  "subscribe.types",
  "subscribe.events",
  "retryWindow",
  "timeout",
  "filters"
]

/** A subscription as one line: "every message" when it takes everything. */
export const describeSubscribe = (subscribe: DestinationView["subscribe"]): string => {
  if (subscribe === undefined || (subscribe.types === undefined && subscribe.events === undefined)) {
    return "every message"
  }
  const types = subscribe.types === undefined ? "every type" : subscribe.types.join(", ")
  return subscribe.events === undefined ? types : `${types}; track events ${subscribe.events.join(", ")}`
}
