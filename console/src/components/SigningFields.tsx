import { randomSecret } from "../pages/sourceForm.js"
import type { SigningScheme } from "../types.js"

/** The signing part of a form: a source's `webhooks` or a destination, the same fields under another path. */
export interface SigningState {
  readonly secretMode: "set" | "none"
  readonly secret: string
  readonly secretMasked?: string | undefined
  readonly signing?: SigningScheme | undefined
  readonly asymmetric?: boolean | undefined
}

/** What a change of these fields sets; the rest of the form stays as it is. */
export interface SigningChange {
  readonly secretMode?: "set" | "none"
  readonly secret?: string
  readonly signing?: SigningScheme
  readonly asymmetric?: boolean
}

/** The shared secret (set or none, generated or typed), the signature scheme and asymmetric signing. */
export const SigningFields = (props: {
  readonly state: SigningState
  /** The DOM id of each field (`sharedSecret`, `signing`, `asymmetric`, and `secretLabel` for the radio group). */
  readonly idOf: (field: "secretLabel" | "sharedSecret" | "signing" | "asymmetric") => string
  /** The path the server names each field by, where its issues are placed. */
  readonly pathOf: (field: "sharedSecret" | "signing" | "asymmetric") => string
  readonly marks: {
    readonly invalid: (path: string) => boolean
    readonly described: (path: string) => string | undefined
    readonly errorsOf: (path: string) => preact.JSX.Element
  }
  readonly asymmetricLabel: string
  readonly update: (change: SigningChange) => void
}) => {
  const { idOf, marks, pathOf, state, update } = props
  const secretPath = pathOf("sharedSecret")
  const signingPath = pathOf("signing")
  const asymmetricPath = pathOf("asymmetric")
  return (
    <>
      <div class="field">
        <span class="label" id={idOf("secretLabel")}>Shared secret (signs every request with X-Signature)</span>
        <div class="radios" role="radiogroup" aria-labelledby={idOf("secretLabel")}>
          <label>
            <input
              type="radio"
              name="secretMode"
              checked={state.secretMode === "set"}
              onChange={() => update({ secretMode: "set" })}
            />{" "}
            Sign requests
          </label>
          <label>
            <input
              type="radio"
              name="secretMode"
              checked={state.secretMode === "none"}
              onChange={() => update({ secretMode: "none", secret: "" })}
            />{" "}
            No signature
          </label>
        </div>
        {state.secretMode === "set" && (
          <div class="inline">
            <label for={idOf("sharedSecret")} class="visually-hidden">Shared secret</label>
            <input
              id={idOf("sharedSecret")}
              name="sharedSecret"
              class="mono grow"
              value={state.secret}
              autoComplete="off"
              spellcheck={false}
              placeholder={state.secretMasked === undefined ? "" : `current: ${state.secretMasked}`}
              aria-invalid={marks.invalid(secretPath)}
              aria-describedby={marks.described(secretPath)}
              onInput={(e) => {
                const secret = e.currentTarget.value
                update({ secret })
              }}
            />
            <button type="button" onClick={() => update({ secret: randomSecret() })}>
              {state.secretMasked === undefined ? "Generate" : "Generate new (rotate)"}
            </button>
          </div>
        )}
        {marks.errorsOf(secretPath)}
      </div>

      <div class="field">
        <label for={idOf("signing")}>Signature scheme</label>
        <select
          id={idOf("signing")}
          name="signing"
          value={state.signing ?? "segment"}
          aria-invalid={marks.invalid(signingPath)}
          aria-describedby={marks.described(signingPath)}
          onChange={(e) => {
            const signing = e.currentTarget.value as SigningScheme
            update({ signing })
          }}
        >
          <option value="segment">X-Signature (HMAC-SHA1, Segment-compatible)</option>
          <option value="standard">Standard Webhooks (webhook-id, -timestamp, -signature)</option>
          <option value="both">Both</option>
        </select>
        {marks.errorsOf(signingPath)}
      </div>

      {state.signing !== undefined && state.signing !== "segment" && (
        <div class="field">
          <input
            type="checkbox"
            id={idOf("asymmetric")}
            checked={state.asymmetric === true}
            aria-invalid={marks.invalid(asymmetricPath)}
            aria-describedby={marks.described(asymmetricPath)}
            onChange={(e) => {
              const asymmetric = e.currentTarget.checked
              update({ asymmetric })
            }}
          />{" "}
          <label for={idOf("asymmetric")}>{props.asymmetricLabel}</label>
          {marks.errorsOf(asymmetricPath)}
        </div>
      )}
    </>
  )
}
