import { useEffect, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api, ApiError } from "../api.js"
import { Empty, ErrorBanner, formatMs, formatTime, Link, StatusBadge } from "../components/ui.js"
import type { Location } from "../router.js"
import { navigate } from "../router.js"
import type { JobView, JobWithAttempts, MessageView, SourceView } from "../types.js"

type Mode = "messageId" | "userId"

const searchPath = (mode: Mode, term: string, sourceId: string) => {
  const query = new URLSearchParams()
  if (term !== "") query.set(mode, term)
  if (sourceId !== "") query.set("sourceId", sourceId)
  const text = query.toString()
  return `/messages${text === "" ? "" : `?${text}`}`
}

const unfinished = (messages: ReadonlyArray<MessageView>) =>
  messages.some((message) => message.jobs.some((job) => job.status === "pending" || job.status === "delivering"))

export const Messages = (props: { readonly location: Location }) => {
  const query = props.location.query
  const messageId = query.get("messageId") ?? ""
  const userId = query.get("userId") ?? ""
  const sourceId = query.get("sourceId") ?? ""
  const [mode, setMode] = useState<Mode>(userId !== "" ? "userId" : "messageId")
  const [term, setTerm] = useState(messageId !== "" ? messageId : userId)
  const [source, setSource] = useState(sourceId)
  const [sources, setSources] = useState<ReadonlyArray<SourceView>>([])
  const [results, setResults] = useState<ReadonlyArray<MessageView> | undefined>(undefined)
  const [notFound, setNotFound] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const [reload, setReload] = useState(0)

  useEffect(() => {
    api.sources().then(setSources, () => {})
  }, [])

  // The search is the URL: a result can be linked to and survives a reload. The form follows the URL when it changes,
  // not on mount (the state starts from it): an effect runs after paint, and would undo a choice made in between.
  const synced = useRef({ messageId, userId, sourceId })
  useEffect(() => {
    const last = synced.current
    if (last.messageId === messageId && last.userId === userId && last.sourceId === sourceId) return
    synced.current = { messageId, userId, sourceId }
    setMode(userId !== "" ? "userId" : "messageId")
    setTerm(messageId !== "" ? messageId : userId)
    setSource(sourceId)
  }, [messageId, userId, sourceId])

  useEffect(() => {
    let cancelled = false
    setError(undefined)
    setNotFound(false)
    if (messageId === "" && userId === "") {
      setResults(undefined)
      return
    }
    const load = messageId !== ""
      ? api.message(messageId).then((message) => [message])
      : api.messagesOfUser(userId, sourceId === "" ? undefined : sourceId)
    load.then(
      (found) => {
        if (!cancelled) setResults(found)
      },
      (failure) => {
        if (cancelled) return
        if (failure instanceof ApiError && failure.status === 404) {
          setNotFound(true)
          setResults([])
        } else setError(failure)
      }
    )
    return () => {
      cancelled = true
    }
  }, [messageId, userId, sourceId, reload])

  // While a job is pending or being delivered, the result refreshes itself.
  useEffect(() => {
    if (results === undefined || !unfinished(results)) return
    const timer = window.setTimeout(() => setReload((n) => n + 1), 1500)
    return () => window.clearTimeout(timer)
  }, [results])

  const submit = (event: Event) => {
    event.preventDefault()
    navigate(searchPath(mode, term.trim(), source))
    setReload((n) => n + 1)
  }

  return (
    <section>
      <h1>Message log</h1>
      <form class="search" onSubmit={submit} role="search">
        <div class="field">
          <label for="search-mode">Find by</label>
          <select id="search-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value as Mode)}>
            <option value="messageId">Message id</option>
            <option value="userId">User id</option>
          </select>
        </div>
        <div class="field grow">
          <label for="search-term">{mode === "messageId" ? "Message id" : "User id"}</label>
          <input
            id="search-term"
            class="mono"
            value={term}
            spellcheck={false}
            autoComplete="off"
            onInput={(e) => setTerm(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="search-source">Source</label>
          <select id="search-source" value={source} onChange={(e) => setSource(e.currentTarget.value)}>
            <option value="">All sources</option>
            {sources.map((s) => <option key={s.id} value={s.id}>{s.id}</option>)}
          </select>
        </div>
        <button type="submit" class="primary">Search</button>
      </form>
      <ErrorBanner error={error} />
      {notFound && <Empty>No message {messageId} was found (it has no jobs, or they were purged).</Empty>}
      {results !== undefined && results.length === 0 && !notFound && (
        <Empty>No messages of user {userId}{sourceId === "" ? "" : ` in ${sourceId}`}.</Empty>
      )}
      {results?.map((message) => (
        <MessageCard
          key={message.messageId}
          message={message}
          onChanged={() => setReload((n) => n + 1)}
        />
      ))}
      <DeadLetters
        sources={sources}
        sourceId={sourceId}
        reload={reload}
        onChanged={() => setReload((n) => n + 1)}
      />
    </section>
  )
}

const MessageCard = (props: { readonly message: MessageView; readonly onChanged: () => void }) => {
  const { message } = props
  return (
    <article class="card message" aria-label={`Message ${message.messageId}`}>
      <header class="message-head">
        <h2 class="mono">{message.messageId}</h2>
        <dl class="facts">
          {message.type !== undefined && message.type !== null && (
            <>
              <dt>type</dt>
              <dd>{message.type}</dd>
            </>
          )}
          {message.event !== undefined && message.event !== null && (
            <>
              <dt>event</dt>
              <dd>{message.event}</dd>
            </>
          )}
          <dt>source</dt>
          <dd>{message.sourceId ?? message.jobs[0]?.sourceId ?? "—"}</dd>
          <dt>user</dt>
          <dd class="mono">{message.userId ?? message.jobs[0]?.userId ?? "—"}</dd>
          {message.receivedAt !== undefined && (
            <>
              <dt>received</dt>
              <dd>{formatTime(message.receivedAt)}</dd>
            </>
          )}
        </dl>
      </header>
      {message.jobs.length === 0 && <Empty>No deliveries (no destination, or every rule filtered it).</Empty>}
      {message.jobs.map((job) => <JobBlock key={job.id} job={job} onChanged={props.onChanged} />)}
    </article>
  )
}

const ReplayButton = (props: { readonly job: JobView; readonly onChanged: () => void }) => {
  const [state, setState] = useState<"idle" | "busy" | "done">("idle")
  const [error, setError] = useState<unknown>(undefined)
  const replay = async () => {
    setState("busy")
    setError(undefined)
    try {
      await api.replay(props.job.id)
      setState("done")
      props.onChanged()
    } catch (failure) {
      setError(failure)
      setState("idle")
    }
  }
  return (
    <span class="replay">
      <button
        type="button"
        onClick={() => void replay()}
        disabled={state !== "idle"}
        aria-label={`${state === "done" ? "Replayed" : "Replay"} message ${props.job.messageId}`}
      >
        {state === "done" ? "Replayed" : state === "busy" ? "Replaying…" : "Replay"}
      </button>
      <ErrorBanner error={error} />
    </span>
  )
}

const JobBlock = (props: { readonly job: JobWithAttempts; readonly onChanged: () => void }) => {
  const { job } = props
  return (
    <section class="job" aria-label={`Job ${job.id}`}>
      <div class="job-head">
        <StatusBadge status={job.status} />
        <span class="mono small">job {job.id}</span>
        {job.kind !== "message" && <span class="muted small">{job.kind}</span>}
        <span class="small">
          {job.attemptCount} attempt{job.attemptCount === 1 ? "" : "s"}
        </span>
        {job.status === "pending" && job.nextDueAt !== null && (
          <span class="small muted">next try {formatTime(job.nextDueAt)}</span>
        )}
        {job.finishedAt !== null && <span class="small muted">finished {formatTime(job.finishedAt)}</span>}
        {job.status === "dead" && access.can("replay") && <ReplayButton job={job} onChanged={props.onChanged} />}
      </div>
      {job.lastError !== null && job.status !== "delivered" && <p class="small error-text">{job.lastError}</p>}
      {job.attempts.length > 0 && (
        <table class="data attempts">
          <caption class="visually-hidden">Attempts of job {job.id}</caption>
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Started</th>
              <th scope="col" class="num">Duration</th>
              <th scope="col" class="num">HTTP</th>
              <th scope="col">Outcome</th>
              <th scope="col">Response or error</th>
            </tr>
          </thead>
          <tbody>
            {job.attempts.map((attempt, i) => (
              <tr key={i}>
                <td>{attempt.attempt}</td>
                <td class="mono small wrap">{attempt.url}</td>
                <td class="nowrap">{formatTime(attempt.startedAt)}</td>
                <td class="num nowrap">{formatMs(attempt.durationMs)}</td>
                <td class="num">{attempt.statusCode ?? "—"}</td>
                <td>
                  <span class={`outcome outcome-${attempt.outcome}`}>{attempt.outcome}</span>
                </td>
                <td class="snippet">
                  {attempt.error !== null && (
                    <span class={attempt.outcome === "aborted" ? "muted-text" : "error-text"}>{attempt.error}</span>
                  )}
                  {attempt.responseSnippet !== null && attempt.responseSnippet !== "" && (
                    <code title={attempt.responseSnippet}>{attempt.responseSnippet.slice(0, 200)}</code>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

const DeadLetters = (props: {
  readonly sources: ReadonlyArray<SourceView>
  readonly sourceId: string
  readonly reload: number
  readonly onChanged: () => void
}) => {
  const [source, setSource] = useState(props.sourceId)
  const [letters, setLetters] = useState<ReadonlyArray<JobView> | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const heading = useRef<HTMLHeadingElement>(null)

  // Follows the page's source when it changes, not on mount (as the search form above).
  const syncedSource = useRef(props.sourceId)
  useEffect(() => {
    if (syncedSource.current === props.sourceId) return
    syncedSource.current = props.sourceId
    setSource(props.sourceId)
  }, [props.sourceId])
  useEffect(() => {
    let cancelled = false
    setError(undefined)
    api.deadLetters(source === "" ? undefined : source).then(
      (found) => {
        if (!cancelled) setLetters(found)
      },
      (failure) => {
        if (!cancelled) setError(failure)
      }
    )
    return () => {
      cancelled = true
    }
  }, [source, props.reload])

  return (
    <section class="dead-letters" aria-labelledby="dead-letters-title">
      <div class="page-head">
        <h2 id="dead-letters-title" ref={heading}>Dead letters</h2>
        <div class="inline">
          <label for="dead-source">Source</label>
          <select id="dead-source" value={source} onChange={(e) => setSource(e.currentTarget.value)}>
            <option value="">All sources</option>
            {props.sources.map((s) => <option key={s.id} value={s.id}>{s.id}</option>)}
          </select>
        </div>
      </div>
      <ErrorBanner error={error} />
      {letters !== undefined && letters.length === 0 && (
        <Empty>No dead letters{source === "" ? "" : ` in ${source}`}.</Empty>
      )}
      {letters !== undefined && letters.length > 0 && (
        <table class="data">
          <caption class="visually-hidden">Dead letters</caption>
          <thead>
            <tr>
              <th scope="col">Message</th>
              <th scope="col">Source</th>
              <th scope="col">User</th>
              <th scope="col" class="num">Attempts</th>
              <th scope="col">Died</th>
              <th scope="col">Last error</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {letters.map((job) => (
              <tr key={job.id}>
                <td class="mono small nowrap">
                  <Link to={`/messages?messageId=${encodeURIComponent(job.messageId)}`}>{job.messageId}</Link>
                </td>
                <td>{job.sourceId}</td>
                <td class="mono small nowrap">{job.userId ?? "—"}</td>
                <td class="num">{job.attemptCount}</td>
                <td class="nowrap">{formatTime(job.finishedAt)}</td>
                <td class="small error-text">{job.lastError ?? "—"}</td>
                <td>
                  <ReplayButton job={job} onChanged={props.onChanged} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
