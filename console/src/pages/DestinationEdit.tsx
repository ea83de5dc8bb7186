import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api, ApiError } from "../api.js"
import { domId, EndpointsEditor } from "../components/EndpointsEditor.js"
import { SigningFields } from "../components/SigningFields.js"
import { ErrorBanner, FieldErrors, Link, NotSaved } from "../components/ui.js"
import { navigate } from "../router.js"
import type { FieldIssue } from "../types.js"
import type { DestinationForm, MessageType } from "./destinationForm.js"
import { destinationInput, destinationPaths, formFromDestination, newDestinationForm } from "./destinationForm.js"
import { messageTypes, placeIssues } from "./sourceForm.js"

/**
 * What the last save said, carried to the source's page: a Standard Webhooks secret it generated is shown there once,
 * since the API never shows it again.
 */
let carried: { readonly sourceId: string; readonly text: string; readonly generatedSecret?: string } | undefined

/** The notice of the last save of one of the source's destinations, once. */
export const takeSavedNotice = (sourceId: string) => {
  const notice = carried?.sourceId === sourceId ? carried : undefined
  carried = undefined
  return notice
}

const sourcePage = (sourceId: string) => `/sources/${encodeURIComponent(sourceId)}`

/** Creates (no `destinationId`) or replaces one destination of a source (REFERENCE §1a). */
export const DestinationEdit = (props: { readonly sourceId: string; readonly destinationId: string | undefined }) => {
  const { sourceId } = props
  const isNew = props.destinationId === undefined
  const [form, setForm] = useState<DestinationForm | undefined>(isNew ? newDestinationForm() : undefined)
  const [loadError, setLoadError] = useState<unknown>(undefined)
  const [issues, setIssues] = useState<ReadonlyArray<FieldIssue>>([])
  const [saveError, setSaveError] = useState<unknown>(undefined)
  const [saving, setSaving] = useState(false)
  const formRef = useRef<HTMLFormElement>(null)

  useEffect(() => {
    if (props.destinationId === undefined) return
    api.destinations(sourceId).then((destinations) => {
      const found = destinations.find((destination) => destination.id === props.destinationId)
      if (found === undefined) {
        setLoadError(new Error(`The source ${sourceId} has no destination ${props.destinationId}.`))
      } else setForm(formFromDestination(found))
    }, setLoadError)
  }, [sourceId, props.destinationId])

  const placed = useMemo(
    () => (form === undefined
      ? new Map<string, ReadonlyArray<FieldIssue>>()
      : placeIssues(issues, destinationPaths(form))),
    [issues, form]
  )

  useLayoutEffect(() => {
    if (issues.length === 0) return
    formRef.current?.querySelector<HTMLElement>("[aria-invalid='true']")?.focus()
  }, [issues])

  const title = isNew ? `New destination of ${sourceId}` : `Destination ${props.destinationId} of ${sourceId}`
  if (loadError !== undefined) {
    return (
      <section>
        <h1>{title}</h1>
        <ErrorBanner error={loadError} />
        <p>
          <Link to={sourcePage(sourceId)}>Back to the source</Link>
        </p>
      </section>
    )
  }
  if (form === undefined) return <p class="loading">Loading…</p>

  const update = (f: (state: DestinationForm) => DestinationForm) =>
    setForm((state) => (state === undefined ? state : f(state)))
  const invalid = (path: string) => (placed.get(path)?.length ?? 0) > 0
  const described = (path: string) => (invalid(path) ? `${domId(path)}-errors` : undefined)
  const errorsOf = (path: string) => <FieldErrors id={`${domId(path)}-errors`} issues={placed.get(path)} />
  const marks = { invalid, described, errorsOf }

  const submit = async (event: Event) => {
    event.preventDefault()
    setSaveError(undefined)
    const { input, issues: local } = destinationInput(form, isNew)
    if (local.length > 0) {
      setIssues(local)
      return
    }
    setSaving(true)
    try {
      const saved = await api.putDestination(sourceId, props.destinationId ?? form.id.trim(), input)
      setIssues([])
      carried = {
        sourceId,
        text: `Destination ${saved.id} saved.`,
        ...(saved.generatedSecret !== undefined && { generatedSecret: saved.generatedSecret })
      }
      navigate(sourcePage(sourceId))
    } catch (error) {
      if (error instanceof ApiError && error.status === 400 && error.errors.length > 0) setIssues(error.errors)
      else setSaveError(error)
    } finally {
      setSaving(false)
    }
  }

  const toggleType = (type: MessageType, on: boolean) =>
    update((s) => ({
      ...s,
      types: on ? messageTypes.filter((t) => t === type || s.types.includes(t)) : s.types.filter((t) => t !== type)
    }))
  const formIssues = placed.get("") ?? []

  return (
    <section>
      <h1>{title}</h1>
      <ErrorBanner error={saveError} />
      <NotSaved what="The destination was" issues={issues} formIssues={formIssues} />
      <form ref={formRef} onSubmit={(event) => void submit(event)} noValidate class="source-form">
        <fieldset>
          <legend>Destination</legend>
          <TextField
            id="destinationId"
            label="Destination id"
            marks={marks}
            readOnly={!isNew}
            value={form.id}
            hint="A slug: lowercase letters, digits, '_' or '-'. It names the destination in jobs, dead letters and metrics."
            onInput={(id) => update((s) => ({ ...s, id }))}
          />
          <TextField
            id="name"
            label="Name"
            marks={marks}
            value={form.name}
            hint="Optional, for people."
            onInput={(name) => update((s) => ({ ...s, name }))}
          />
          <div class="field checkbox">
            <input
              id="destination-enabled"
              type="checkbox"
              checked={form.enabled}
              aria-invalid={invalid("enabled")}
              onChange={(e) => update((s) => ({ ...s, enabled: e.currentTarget.checked }))}
            />
            <label for="destination-enabled">Enabled (off: nothing is delivered to it)</label>
            {errorsOf("enabled")}
          </div>
        </fieldset>

        <fieldset>
          <legend>Subscription</legend>
          <div class="field">
            <span class="label" id="types-label">Message types (none checked: every type)</span>
            <div class="radios" role="group" aria-labelledby="types-label">
              {messageTypes.map((type) => (
                <label key={type}>
                  <input
                    type="checkbox"
                    checked={form.types.includes(type)}
                    onChange={(e) => toggleType(type, e.currentTarget.checked)}
                  />{" "}
                  {type}
                </label>
              ))}
            </div>
            {errorsOf("subscribe")}
            {errorsOf("subscribe.types")}
          </div>
          <div class="field">
            <label for={domId("subscribe.events")}>Track events, one a line (empty: every event)</label>
            <textarea
              id={domId("subscribe.events")}
              rows={3}
              value={form.events}
              aria-invalid={invalid("subscribe.events")}
              aria-describedby={described("subscribe.events")}
              onInput={(e) => {
                const events = e.currentTarget.value
                update((s) => ({ ...s, events }))
              }}
            />
            <p class="hint">Tracks whose event is not listed are not delivered here; other types are not affected.</p>
            {errorsOf("subscribe.events")}
          </div>
        </fieldset>

        <fieldset>
          <legend>Delivery</legend>
          <TextField
            id="retryWindow"
            label="Retry window"
            marks={marks}
            value={form.retryWindow}
            hint="How long a job is retried from its first attempt: 1 minute to 72 hours. Empty: 4 hours."
            onInput={(retryWindow) => update((s) => ({ ...s, retryWindow }))}
          />
          <TextField
            id="timeout"
            label="Request timeout"
            marks={marks}
            value={form.timeout}
            hint="The deadline of each request: 1 to 30 seconds. Empty: 5 seconds."
            onInput={(timeout) => update((s) => ({ ...s, timeout }))}
          />
          <EndpointsEditor
            at="endpoints"
            endpoints={form.endpoints}
            marks={marks}
            onChange={(f) => update((s) => ({ ...s, endpoints: f(s.endpoints) }))}
          />
          <div class="field">
            <label for={domId("filters")}>Filters (JSON drop rules; empty: none)</label>
            <textarea
              id={domId("filters")}
              class="mono"
              rows={4}
              value={form.filters}
              aria-invalid={invalid("filters")}
              aria-describedby={described("filters")}
              placeholder='[{"if": {"type": ["page"]}, "then": "drop"}]'
              onInput={(e) => {
                const filters = e.currentTarget.value
                update((s) => ({ ...s, filters }))
              }}
            />
            {errorsOf("filters")}
          </div>
        </fieldset>

        <fieldset>
          <legend>Signing</legend>
          <SigningFields
            state={form}
            idOf={(field) => field === "secretLabel" ? "destination-secret-label" : domId(field)}
            pathOf={(field) => field}
            marks={{ invalid, described, errorsOf }}
            asymmetricLabel="Asymmetric signatures too (v1a, ed25519)"
            update={(change) => update((s) => ({ ...s, ...change }))}
          />
        </fieldset>

        <div class="actions">
          {access.can("sources:write") && (
            <button type="submit" class="primary" disabled={saving}>
              {saving ? "Saving…" : isNew ? "Create destination" : "Save destination"}
            </button>
          )}
          <Link to={sourcePage(sourceId)}>Cancel</Link>
        </div>
      </form>
    </section>
  )
}

/** One text input of the form, its hint and the issues at its path. */
const TextField = (props: {
  readonly id: string
  readonly label: string
  readonly value: string
  readonly hint?: string
  readonly readOnly?: boolean
  readonly marks: {
    readonly invalid: (path: string) => boolean
    readonly errorsOf: (path: string) => preact.JSX.Element
  }
  readonly onInput: (value: string) => void
}) => {
  const id = domId(props.id)
  const invalid = props.marks.invalid(props.id)
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        value={props.value}
        readOnly={props.readOnly === true}
        autoComplete="off"
        spellcheck={false}
        aria-invalid={invalid}
        aria-describedby={[invalid ? `${id}-errors` : "", props.hint === undefined ? "" : `${id}-hint`].join(" ")
          .trim()}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
      {props.hint !== undefined && <p class="hint" id={`${id}-hint`}>{props.hint}</p>}
      {props.marks.errorsOf(props.id)}
    </div>
  )
}
