import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api, ApiError } from "../api.js"
import { domId, EndpointsEditor } from "../components/EndpointsEditor.js"
import { SigningFields } from "../components/SigningFields.js"
import { ErrorBanner, FieldErrors, Link, NotSaved } from "../components/ui.js"
import { navigate } from "../router.js"
import type { FieldIssue, SourceView } from "../types.js"
import { OnceSecret, SigningPanel } from "./SigningPanel.js"
import { SourceActivity } from "./SourceActivity.js"
import { SourceDestinations } from "./SourceDestinations.js"
import type { FormState, PropertyRow, RuleRow, ValueKind } from "./sourceForm.js"
import {
  emptyEvent,
  emptyProperty,
  emptyRule,
  fieldPaths,
  formFromSource,
  messageTypes,
  newSourceForm,
  placeIssues,
  randomSecret,
  removeAt,
  replaceAt,
  toInput
} from "./sourceForm.js"

/**
 * The form as the operator filled it, carried from "create" to the page of the new source: the
 * write key and secret stay visible there, to be copied, since the API never shows them again.
 */
let carried: { readonly id: string; readonly form: FormState; readonly generatedSecret?: string } | undefined

const withMasksOf = (form: FormState, source: SourceView): FormState => {
  const { secretMasked: _, ...rest } = form
  return {
    ...rest,
    writeKeyMasked: source.writeKey,
    ...(source.webhooks?.sharedSecret !== undefined && { secretMasked: source.webhooks.sharedSecret })
  }
}

/** Changes with every save of the source: its destinations are read again (the form edits the destination `webhooks`). */
const storedVersion = (source: SourceView) => Date.parse(source.updatedAt ?? "") || 0

/** The DOM ids of the `webhooks` signing fields (the page's tests and labels use them). */
const signingIds = {
  secretLabel: "secret-label",
  sharedSecret: "shared-secret",
  signing: "signing",
  asymmetric: "asymmetric"
}

export const SourceEdit = (props: { readonly sourceId: string | undefined }) => {
  const isNew = props.sourceId === undefined
  const [form, setForm] = useState<FormState | undefined>(isNew ? newSourceForm() : undefined)
  const [loadError, setLoadError] = useState<unknown>(undefined)
  const [issues, setIssues] = useState<ReadonlyArray<FieldIssue>>([])
  const [saveError, setSaveError] = useState<unknown>(undefined)
  const [saving, setSaving] = useState(false)
  const [saved, setSaved] = useState<string | undefined>(undefined)
  const [created, setCreated] = useState(false)
  // The saved source (for its signing panel) and a secret the last save generated, shown once.
  const [stored, setStored] = useState<SourceView | undefined>(undefined)
  const [generated, setGenerated] = useState<string | undefined>(undefined)
  const formRef = useRef<HTMLFormElement>(null)

  useEffect(() => {
    if (props.sourceId === undefined) {
      setForm(newSourceForm())
      return
    }
    if (carried?.id === props.sourceId) {
      setForm(carried.form)
      setGenerated(carried.generatedSecret)
      reloadStored()
      setCreated(true)
      carried = undefined
      return
    }
    setForm(undefined)
    api.source(props.sourceId).then((source) => {
      setForm(formFromSource(source))
      setStored(source)
    }, setLoadError)
  }, [props.sourceId])

  const reloadStored = () => {
    if (props.sourceId !== undefined) api.source(props.sourceId).then(setStored, setLoadError)
  }

  const placed = useMemo(
    () => (form === undefined ? new Map<string, ReadonlyArray<FieldIssue>>() : placeIssues(issues, fieldPaths(form))),
    [issues, form]
  )

  // After a refused save, the first input with a problem gets the focus, in the same frame as the errors appear (a
  // layout effect: a plain one runs after paint, and input in between would lose the focus to it).
  useLayoutEffect(() => {
    if (issues.length === 0) return
    const first = formRef.current?.querySelector<HTMLElement>("[aria-invalid='true']")
    first?.focus()
  }, [issues])

  if (loadError !== undefined) {
    return (
      <section>
        <h1>Source {props.sourceId}</h1>
        <ErrorBanner error={loadError} />
        <p>
          <Link to="/sources">Back to the sources</Link>
        </p>
      </section>
    )
  }
  if (form === undefined) return <p class="loading">Loading…</p>

  const update = (f: (state: FormState) => FormState) => setForm((state) => (state === undefined ? state : f(state)))
  const at = (path: string) => placed.get(path)
  const invalid = (path: string) => (placed.get(path)?.length ?? 0) > 0
  const described = (path: string) => (invalid(path) ? `${domId(path)}-errors` : undefined)
  const errorsOf = (path: string) => <FieldErrors id={`${domId(path)}-errors`} issues={at(path)} />

  const updateRule = (r: number, f: (rule: RuleRow) => RuleRow) =>
    update((s) => ({ ...s, rules: replaceAt(s.rules, r, f) }))
  const updateProperty = (r: number, p: number, f: (row: PropertyRow) => PropertyRow) =>
    updateRule(r, (rule) => ({ ...rule, properties: replaceAt(rule.properties, p, f) }))

  const submit = async (event: Event) => {
    event.preventDefault()
    setSaveError(undefined)
    setSaved(undefined)
    const { input, issues: local } = toInput(form, isNew)
    if (local.length > 0) {
      setIssues(local)
      return
    }
    const id = isNew ? form.id.trim() : props.sourceId
    setSaving(true)
    try {
      const source = await api.putSource(id, input)
      setIssues([])
      setGenerated(source.generatedSecret)
      setStored(source)
      if (isNew) {
        carried = {
          id: source.id,
          form: withMasksOf(form, source),
          ...(source.generatedSecret !== undefined && { generatedSecret: source.generatedSecret })
        }
        navigate(`/sources/${encodeURIComponent(source.id)}`)
      } else {
        setForm(withMasksOf(form, source))
        setSaved(
          "Saved. The write key and shared secret stay in the form until you leave this page: copy them now if you need them, the API will not show them again."
        )
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 400 && error.errors.length > 0) {
        setIssues(error.errors)
      } else if (error instanceof ApiError && error.status === 409 && error.errors.length > 0) {
        setIssues(error.errors)
      } else {
        setSaveError(error)
      }
    } finally {
      setSaving(false)
    }
  }

  const remove = async () => {
    if (props.sourceId === undefined) return
    if (!window.confirm(`Delete the source ${props.sourceId}? Its write key stops working at once.`)) return
    try {
      await api.deleteSource(props.sourceId)
      navigate("/sources")
    } catch (error) {
      setSaveError(error)
    }
  }

  const formIssues = placed.get("") ?? []

  return (
    <section>
      <h1>{isNew ? "New source" : `Source ${props.sourceId}`}</h1>
      {created && saved === undefined && issues.length === 0 && (
        <div class="banner banner-ok" role="status">
          Source created. Its write key and shared secret stay in the form until you leave this page: copy them now if
          you need them, the API will not show them again.
        </div>
      )}
      {saved !== undefined && <div class="banner banner-ok" role="status">{saved}</div>}
      <ErrorBanner error={saveError} />
      <NotSaved what="The settings were" issues={issues} formIssues={formIssues} />
      <form ref={formRef} onSubmit={(event) => void submit(event)} noValidate class="source-form">
        <fieldset>
          <legend>Source</legend>
          <div class="field">
            <label for="source-id">Source id</label>
            {isNew
              ? (
                <input
                  id="source-id"
                  name="id"
                  value={form.id}
                  autoComplete="off"
                  spellcheck={false}
                  required
                  aria-invalid={invalid("id")}
                  aria-describedby={described("id")}
                  onInput={(e) => update((s) => ({ ...s, id: e.currentTarget.value }))}
                />
              )
              : <input id="source-id" value={form.id} readOnly />}
            {errorsOf("id")}
          </div>
          <div class="field">
            <label for="write-key">Write key</label>
            <div class="inline">
              <input
                id="write-key"
                name="writeKey"
                class="mono grow"
                value={form.writeKey}
                autoComplete="off"
                spellcheck={false}
                placeholder={form.writeKeyMasked === undefined ? "" : `current: ${form.writeKeyMasked}`}
                aria-invalid={invalid("writeKey")}
                aria-describedby={described("writeKey") ?? "write-key-hint"}
                onInput={(e) => update((s) => ({ ...s, writeKey: e.currentTarget.value }))}
              />
              <button type="button" onClick={() => update((s) => ({ ...s, writeKey: randomSecret() }))}>
                {isNew ? "Generate" : "Generate new (rotate)"}
              </button>
            </div>
            <p class="hint" id="write-key-hint">
              {isNew
                ? "Clients send it as the Basic auth user name."
                : `The API shows it masked (${form.writeKeyMasked}). Saving replaces the whole source: enter the key again.`}
            </p>
            {errorsOf("writeKey")}
          </div>
        </fieldset>

        <fieldset>
          <legend>Webhook destination</legend>
          <div class="field checkbox">
            <input
              id="has-webhooks"
              type="checkbox"
              checked={form.hasWebhooks}
              onChange={(e) => update((s) => ({ ...s, hasWebhooks: e.currentTarget.checked }))}
            />
            <label for="has-webhooks">Deliver this source's messages to webhooks</label>
          </div>
          {errorsOf("webhooks")}
          {form.hasWebhooks && (
            <>
              <div class="field checkbox">
                <input
                  id="enabled"
                  type="checkbox"
                  checked={form.enabled}
                  aria-invalid={invalid("webhooks.enabled")}
                  onChange={(e) => update((s) => ({ ...s, enabled: e.currentTarget.checked }))}
                />
                <label for="enabled">Enabled (off: nothing is delivered)</label>
                {errorsOf("webhooks.enabled")}
              </div>

              <SigningFields
                state={form}
                idOf={(field) => signingIds[field]}
                pathOf={(field) => `webhooks.${field}`}
                marks={{ invalid, described, errorsOf }}
                asymmetricLabel="Asymmetric signatures too (v1a, ed25519: receivers need only a public key)"
                update={(change) => update((s) => ({ ...s, ...change }))}
              />

              <EndpointsEditor
                at="webhooks.endpoints"
                endpoints={form.endpoints}
                marks={{ invalid, described, errorsOf }}
                onChange={(f) => update((s) => ({ ...s, endpoints: f(s.endpoints) }))}
              />

              <div class="group" role="group" aria-labelledby="filters-title">
                <h2 id="filters-title">Filters</h2>
                <p class="hint">
                  A message that matches every condition of a rule is not delivered (it is still accepted and counted as
                  filtered).
                </p>
                {errorsOf("webhooks.filters")}
                {form.rules.map((rule, r) => (
                  <RuleEditor
                    key={rule.key}
                    rule={rule}
                    index={r}
                    invalid={invalid}
                    described={described}
                    errorsOf={errorsOf}
                    onChange={(f) => updateRule(r, f)}
                    onProperty={(p, f) => updateProperty(r, p, f)}
                    onRemove={() => update((s) => ({ ...s, rules: removeAt(s.rules, r) }))}
                  />
                ))}
                <button type="button" onClick={() => update((s) => ({ ...s, rules: [...s.rules, emptyRule()] }))}>
                  Add filter rule
                </button>
              </div>
            </>
          )}
        </fieldset>

        <div class="actions">
          {access.can("sources:write") && (
            <button type="submit" class="primary" disabled={saving}>
              {saving ? "Saving…" : isNew ? "Create source" : "Save source"}
            </button>
          )}
          <Link to="/sources">Cancel</Link>
          {!isNew && access.can("sources:write") && (
            <button type="button" class="danger" onClick={() => void remove()}>
              Delete source
            </button>
          )}
        </div>
      </form>
      <OnceSecret secret={generated} />
      {!isNew && stored !== undefined && <SigningPanel source={stored} onRotated={reloadStored} />}
      {!isNew && props.sourceId !== undefined && stored !== undefined && (
        <>
          <SourceDestinations sourceId={props.sourceId} version={storedVersion(stored)} />
          <SourceActivity sourceId={props.sourceId} version={storedVersion(stored)} />
        </>
      )}
    </section>
  )
}

const RuleEditor = (props: {
  readonly rule: RuleRow
  readonly index: number
  readonly invalid: (path: string) => boolean
  readonly described: (path: string) => string | undefined
  readonly errorsOf: (path: string) => preact.JSX.Element
  readonly onChange: (f: (rule: RuleRow) => RuleRow) => void
  readonly onProperty: (p: number, f: (row: PropertyRow) => PropertyRow) => void
  readonly onRemove: () => void
}) => {
  const { described, errorsOf, index, invalid, onChange, onProperty, rule } = props
  const path = `webhooks.filters[${index}]`
  const n = index + 1
  return (
    <div class="card rule" role="group" aria-label={`Filter rule ${n}`}>
      <div class="rule-head">
        <h3>Rule {n}: drop messages where</h3>
        <button type="button" class="danger-text" onClick={props.onRemove}>Remove rule {n}</button>
      </div>
      {errorsOf(path)}
      {errorsOf(`${path}.if`)}
      {errorsOf(`${path}.then`)}
      <div class="field">
        <label for={domId(`${path}.if.type`)}>Type is one of</label>
        <input
          id={domId(`${path}.if.type`)}
          class="mono"
          value={rule.types}
          placeholder="track, page"
          spellcheck={false}
          aria-invalid={invalid(`${path}.if.type`)}
          aria-describedby={described(`${path}.if.type`) ?? `${domId(`${path}.if.type`)}-hint`}
          onInput={(e) => {
            const types = e.currentTarget.value
            onChange((x) => ({ ...x, types }))
          }}
        />
        <p class="hint" id={`${domId(`${path}.if.type`)}-hint`}>
          Separated by commas: {messageTypes.join(", ")}. Empty: any type.
        </p>
        {errorsOf(`${path}.if.type`)}
      </div>
      <div class="field">
        <span class="label">Event is one of {rule.events.length === 0 && <span class="hint">(any event)</span>}</span>
        {errorsOf(`${path}.if.event`)}
        {rule.events.map((event, v) => {
          const eventPath = `${path}.if.event[${v}]`
          return (
            <div key={event.key}>
              <div class="inline">
                <label for={domId(eventPath)} class="visually-hidden">Rule {n} event {v + 1}</label>
                <input
                  id={domId(eventPath)}
                  class="grow"
                  value={event.name}
                  placeholder="Order Completed"
                  aria-invalid={invalid(eventPath)}
                  aria-describedby={described(eventPath)}
                  onInput={(e) => {
                    const name = e.currentTarget.value
                    onChange((x) => ({ ...x, events: replaceAt(x.events, v, (y) => ({ ...y, name })) }))
                  }}
                />
                <button
                  type="button"
                  class="danger-text"
                  onClick={() => onChange((x) => ({ ...x, events: removeAt(x.events, v) }))}
                >
                  Remove event
                </button>
              </div>
              {errorsOf(eventPath)}
            </div>
          )
        })}
        <button type="button" onClick={() => onChange((x) => ({ ...x, events: [...x.events, emptyEvent()] }))}>
          Add event to rule {n}
        </button>
      </div>
      <div class="field">
        <span class="label">
          Properties equal {rule.properties.length === 0 && <span class="hint">(any properties)</span>}
        </span>
        {errorsOf(`${path}.if.properties`)}
        {rule.properties.map((row, p) => {
          const rowPath = `${path}.if.properties.${row.path}`
          const id = domId(`${path}.if.properties[${p}]`)
          return (
            <div key={row.key}>
              <div class="inline">
                <label for={`${id}-path`} class="visually-hidden">Rule {n} property {p + 1} path</label>
                <input
                  id={`${id}-path`}
                  class="mono"
                  value={row.path}
                  placeholder="plan.tier"
                  spellcheck={false}
                  aria-invalid={invalid(rowPath)}
                  onInput={(e) => {
                    const value = e.currentTarget.value
                    onProperty(p, (x) => ({ ...x, path: value }))
                  }}
                />
                <span aria-hidden="true">=</span>
                <label for={`${id}-kind`} class="visually-hidden">Rule {n} property {p + 1} value type</label>
                <select
                  id={`${id}-kind`}
                  value={row.kind}
                  onChange={(e) => {
                    const kind = e.currentTarget.value as ValueKind
                    onProperty(p, (x) => ({ ...x, kind, value: kind === "boolean" ? "true" : x.value }))
                  }}
                >
                  <option value="text">text</option>
                  <option value="number">number</option>
                  <option value="boolean">true/false</option>
                  <option value="null">null</option>
                  <option value="json">JSON</option>
                </select>
                {row.kind === "boolean" && (
                  <>
                    <label for={`${id}-value`} class="visually-hidden">Rule {n} property {p + 1} value</label>
                    <select
                      id={`${id}-value`}
                      value={row.value}
                      onChange={(e) => {
                        const value = e.currentTarget.value
                        onProperty(p, (x) => ({ ...x, value }))
                      }}
                    >
                      <option value="true">true</option>
                      <option value="false">false</option>
                    </select>
                  </>
                )}
                {(row.kind === "text" || row.kind === "number" || row.kind === "json") && (
                  <>
                    <label for={`${id}-value`} class="visually-hidden">Rule {n} property {p + 1} value</label>
                    <input
                      id={`${id}-value`}
                      class={row.kind === "json" ? "grow mono" : "grow"}
                      value={row.value}
                      inputMode={row.kind === "number" ? "decimal" : undefined}
                      aria-invalid={invalid(rowPath)}
                      onInput={(e) => {
                        const value = e.currentTarget.value
                        onProperty(p, (x) => ({ ...x, value }))
                      }}
                    />
                  </>
                )}
                <button
                  type="button"
                  class="danger-text"
                  onClick={() => onChange((x) => ({ ...x, properties: removeAt(x.properties, p) }))}
                >
                  Remove property
                </button>
              </div>
              {errorsOf(rowPath)}
            </div>
          )
        })}
        <button
          type="button"
          onClick={() => onChange((x) => ({ ...x, properties: [...x.properties, emptyProperty()] }))}
        >
          Add property condition to rule {n}
        </button>
      </div>
    </div>
  )
}
