import { useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { ErrorBanner, formatTime } from "../components/ui.js"
import type { SourceView } from "../types.js"

/** A secret shown in full once (generated on save or by a rotation): to copy now, the API never shows it again. */
export const OnceSecret = (props: { readonly secret: string | undefined }) =>
  props.secret === undefined ? null : (
    <div class="notice" role="status">
      <p>
        New signing secret, shown only now: copy it to your receivers.
      </p>
      <p>
        <code class="mono" data-testid="new-signing-secret">{props.secret}</code>
      </p>
    </div>
  )

/**
 * A source's Standard Webhooks signing as saved: its secrets (by prefix, never in full), the public key of its
 * asymmetric signatures, and the rotation, whose new secret is shown once.
 */
export const SigningPanel = (props: { readonly source: SourceView; readonly onRotated: () => void }) => {
  const webhooks = props.source.webhooks
  const [keepOldFor, setKeepOldFor] = useState("24 hours")
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  if (webhooks === undefined) return null

  const rotate = async () => {
    setError(undefined)
    setBusy(true)
    try {
      const rotated = await api.rotateSecret(props.source.id, keepOldFor)
      setSecret(rotated.secret)
      props.onRotated()
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }

  const secrets = webhooks.signingSecrets ?? []
  return (
    <div class="group" role="group" aria-labelledby="signing-title">
      <h2 id="signing-title">Standard Webhooks signing</h2>
      {webhooks.publicKey !== undefined && (
        <p>
          Public key (receivers verify <code>v1a</code> signatures with it):{" "}
          <code class="mono" data-testid="public-key">{webhooks.publicKey}</code>
        </p>
      )}
      {secrets.length === 0 ? <p>No signing secret yet.</p> : (
        <table>
          <thead>
            <tr>
              <th>Secret</th>
              <th>Created</th>
              <th>Expires</th>
            </tr>
          </thead>
          <tbody>
            {secrets.map((item) => (
              <tr key={item.id}>
                <td class="mono">{item.prefix}…</td>
                <td>{formatTime(item.createdAt)}</td>
                <td>{item.expiresAt === null ? "never" : formatTime(item.expiresAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="inline">
        <label for="keep-old-for">Keep the old secrets signing for</label>
        <input
          id="keep-old-for"
          value={keepOldFor}
          onInput={(e) => setKeepOldFor(e.currentTarget.value)}
        />
        {access.can("sources:write") && (
          <button type="button" disabled={busy} onClick={() => void rotate()}>Rotate secret</button>
        )}
      </div>
      <ErrorBanner error={error} />
      <OnceSecret secret={secret} />
    </div>
  )
}
