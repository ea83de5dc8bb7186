import { render } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { access } from "./access.js"
import { api, session, setUnauthorizedHandler } from "./api.js"
import { BacklogStrip } from "./components/BacklogStrip.js"
import { Link } from "./components/ui.js"
import { ApiReference } from "./pages/ApiReference.js"
import { DestinationEdit } from "./pages/DestinationEdit.js"
import { Endpoints } from "./pages/Endpoints.js"
import { Login } from "./pages/Login.js"
import { Messages } from "./pages/Messages.js"
import { SourceEdit } from "./pages/SourceEdit.js"
import { Sources } from "./pages/Sources.js"
import { Usage } from "./pages/Usage.js"
import type { Location } from "./router.js"
import { navigate, useLocation } from "./router.js"
import "./styles.css"

const Page = (props: { readonly location: Location }) => {
  const path = props.location.path.replace(/\/+$/, "") || "/"
  if (path === "/sources/new") return <SourceEdit sourceId={undefined} />
  const destination = /^\/sources\/([^/]+)\/destinations\/([^/]+)$/.exec(path)
  if (destination !== null) {
    const destinationId = decodeURIComponent(destination[2]!)
    return (
      <DestinationEdit
        sourceId={decodeURIComponent(destination[1]!)}
        destinationId={destinationId === "new" ? undefined : destinationId}
      />
    )
  }
  const source = /^\/sources\/([^/]+)$/.exec(path)
  if (source !== null) return <SourceEdit sourceId={decodeURIComponent(source[1]!)} />
  if (path === "/sources") return <Sources />
  if (path === "/messages") return <Messages location={props.location} />
  if (path === "/usage") return <Usage location={props.location} />
  if (path === "/endpoints") return <Endpoints location={props.location} />
  if (path === "/api") return <ApiReference />
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no console page at {props.location.path}. <Link to="/sources">Go to the sources</Link>.
      </p>
    </section>
  )
}

const titles: Record<string, string> = {
  sources: "Sources",
  messages: "Message log",
  usage: "Usage",
  endpoints: "Endpoints",
  api: "Admin API"
}

const App = () => {
  const location = useLocation()
  const [loggedIn, setLoggedIn] = useState(session.token() !== null)
  const [notice, setNotice] = useState<string | undefined>(undefined)

  useEffect(() => {
    setUnauthorizedHandler(() => {
      setNotice("Wrong token: the server refused it. Log in again.")
      setLoggedIn(false)
    })
  }, [])

  useEffect(() => {
    if (location.path === "/" || location.path === "") navigate("/sources", { replace: true })
  }, [location.path])

  // What the token may do, asked again when the tab kept the token but not the answer.
  const [, setKnown] = useState(access.self() !== null)
  useEffect(() => {
    if (loggedIn && access.self() === null) {
      api.self().then((self) => {
        access.remember(self)
        setKnown(true)
      }, () => {})
    }
  }, [loggedIn])

  // A new page moves the keyboard focus to its content (not on the first page shown).
  const shownPath = useRef<string | undefined>(undefined)
  useEffect(() => {
    if (shownPath.current !== undefined && shownPath.current !== location.path) {
      document.getElementById("main")?.focus()
    }
    shownPath.current = location.path
  }, [location.path])

  const section = location.path.split("/")[1] ?? ""
  useEffect(() => {
    document.title = `${titles[section] ?? "Console"} · hookrelay`
  }, [section])

  if (!loggedIn) {
    return (
      <Login
        notice={notice}
        onLoggedIn={() => {
          setNotice(undefined)
          setLoggedIn(true)
        }}
      />
    )
  }

  const logOut = () => {
    session.logOut()
    setNotice(undefined)
    setLoggedIn(false)
  }

  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <span class="brand">hookrelay</span>
        <nav aria-label="Console">
          <Link to="/sources" current={section === "sources"}>Sources</Link>
          {access.can("messages:read") && <Link to="/messages" current={section === "messages"}>Message log</Link>}
          <Link to="/usage" current={section === "usage"}>Usage</Link>
          <Link to="/endpoints" current={section === "endpoints"}>Endpoints</Link>
          <Link to="/api" current={section === "api"}>API</Link>
        </nav>
        <span class="muted">{access.self()?.name}</span>
        <button type="button" class="logout" onClick={logOut}>Log out</button>
      </header>
      {access.can("sources:read") && access.everySource() && <BacklogStrip />}
      <main id="main" tabIndex={-1}>
        <Page location={location} />
      </main>
    </>
  )
}

render(<App />, document.getElementById("app")!)
