import { useEffect, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api, ApiError, session } from "../api.js"

/** Asks for the admin token or an API key, checks it against the API, keeps it for this browser tab only. */
export const Login = (props: { readonly notice: string | undefined; readonly onLoggedIn: () => void }) => {
  const [token, setToken] = useState("")
  const [error, setError] = useState<string | undefined>(props.notice)
  const [busy, setBusy] = useState(false)
  const input = useRef<HTMLInputElement>(null)

  useEffect(() => input.current?.focus(), [])

  const submit = async (event: Event) => {
    event.preventDefault()
    if (token.trim() === "") {
      setError("Enter the admin token or an API key.")
      return
    }
    setBusy(true)
    setError(undefined)
    try {
      const self = await api.self(token.trim())
      session.logIn(token.trim())
      access.remember(self)
      props.onLoggedIn()
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) setError("Wrong token.")
      else if (failure instanceof ApiError && failure.status === 404) {
        setError("The admin API is disabled on this server: start it with HOOKRELAY_ADMIN_TOKEN set.")
      } else setError(failure instanceof Error ? failure.message : String(failure))
      input.current?.focus()
    } finally {
      setBusy(false)
    }
  }

  return (
    <main class="login">
      <form onSubmit={(event) => void submit(event)} class="card login-card">
        <h1>hookrelay console</h1>
        <p class="hint">
          Enter the admin token (HOOKRELAY_ADMIN_TOKEN) or an API key (hrk_…). It is kept in this tab only and forgotten
          when you log out or close it. The console shows what the key's scopes allow.
        </p>
        <div class="field">
          <label for="token">Admin token or API key</label>
          <input
            id="token"
            ref={input}
            type="password"
            autoComplete="current-password"
            value={token}
            aria-invalid={error !== undefined}
            aria-describedby={error === undefined ? undefined : "login-error"}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
        </div>
        {error !== undefined && (
          <p id="login-error" class="field-errors" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>{busy ? "Checking…" : "Log in"}</button>
      </form>
    </main>
  )
}
