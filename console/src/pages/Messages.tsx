import { useEffect, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatTime, Link, StatusBadge } from "../components/ui.js"
import {
  filtersOf,
  fromLocalInput,
  type LogFilters,
  logPath,
  logQuery,
  logStatuses,
  messageTypes,
  toLocalInput
} from "../messageLog.js"
import type { Location } from "../router.js"
import { navigate } from "../router.js"
import type { DestinationView, LogDestinationView, LogMessageView, MessageLogPage, SourceView } from "../types.js"
import { DeadLetters } from "./DeadLetters.js"
import { MessageDetail, ReplayButton } from "./MessageDetail.js"

// The message log (REFERENCE §12): the newest messages of the chosen source, filtered, a page at a time; each message
// opens on its deliveries (`?messageId=`). The URL holds the listing, so it can be linked to and survives a reload.

export const Messages = (props: { readonly location: Location }) => {
  const query = props.location.query
  const messageId = query.get("messageId") ?? ""
  const [sources, setSources] = useState<ReadonlyArray<SourceView> | undefined>(undefined)
  const [reload, setReload] = useState(0)
  const changed = () => setReload((n) => n + 1)

  useEffect(() => {
    api.sources().then(setSources, () => setSources([]))
  }, [])

  return (
    <section>
      <h1>Message log</h1>
      {messageId === ""
        ? <MessageLog query={query} sources={sources} reload={reload} onChanged={changed} />
        : (
          <>
            <p>
              <Link to={logPath(filtersOf(query))}>Back to the log</Link>
            </p>
            <MessageDetail messageId={messageId} reload={reload} onChanged={changed} />
          </>
        )}
      <DeadLetters
        sources={sources ?? []}
        sourceId={query.get("sourceId") ?? ""}
        reload={reload}
        onChanged={changed}
      />
    </section>
  )
}

const unfinished = (page: MessageLogPage) =>
  page.messages.some((message) =>
    message.destinations.some((destination) => destination.status === "pending" || destination.status === "delivering")
  )

const MessageLog = (props: {
  readonly query: URLSearchParams
  readonly sources: ReadonlyArray<SourceView> | undefined
  readonly reload: number
  readonly onChanged: () => void
}) => {
  const filters = filtersOf(props.query)
  const after = props.query.get("after") ?? ""
  const key = logPath(filters, after)
  const [page, setPage] = useState<MessageLogPage | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [refresh, setRefresh] = useState(0)

  // No source in the URL: the log opens on the first source the key sees.
  const first = props.sources?.[0]?.id
  useEffect(() => {
    if (filters.sourceId === null && first !== undefined) {
      navigate(logPath({ ...filters, sourceId: first }), { replace: true })
    }
  }, [filters.sourceId, first])

  useEffect(() => {
    if (filters.sourceId === null) return
    let cancelled = false
    setError(undefined)
    api.messageLog(logQuery(filters, after)).then(
      (found) => {
        if (!cancelled) setPage(found)
      },
      (failure) => {
        if (cancelled) return
        setPage(undefined)
        setError(failure)
      }
    )
    return () => {
      cancelled = true
    }
  }, [key, props.reload, refresh])

  // While a delivery is pending or under way, the page refreshes itself.
  useEffect(() => {
    if (page === undefined || !unfinished(page)) return
    const timer = window.setTimeout(() => setRefresh((n) => n + 1), 1500)
    return () => window.clearTimeout(timer)
  }, [page])

  if (props.sources !== undefined && props.sources.length === 0) return <Empty>No sources yet.</Empty>
  return (
    <>
      <FilterForm filters={filters} sources={props.sources ?? []} />
      <ErrorBanner error={error} />
      {page !== undefined && page.messages.length === 0 && (
        <Empty>No messages{after === "" ? "" : " older than the last page"} match these filters.</Empty>
      )}
      {page !== undefined && page.messages.length > 0 && (
        <table class="data message-log">
          <caption class="visually-hidden">Messages, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Message</th>
              <th scope="col">Type</th>
              <th scope="col">Event</th>
              <th scope="col">User</th>
              <th scope="col">Destinations</th>
            </tr>
          </thead>
          <tbody>
            {page.messages.map((message) => (
              <MessageRow
                key={`${message.sourceId}/${message.messageId}`}
                message={message}
                onChanged={props.onChanged}
              />
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager inline" aria-label="Pages">
        {after !== "" && <button type="button" onClick={() => navigate(logPath(filters))}>Back to newest</button>}
        {page?.next != null && (
          <button type="button" onClick={() => navigate(logPath(filters, page.next ?? undefined))}>Next page</button>
        )}
      </nav>
    </>
  )
}

const MessageRow = (props: { readonly message: LogMessageView; readonly onChanged: () => void }) => {
  const { message } = props
  const detail = `/messages?messageId=${encodeURIComponent(message.messageId)}&sourceId=${
    encodeURIComponent(message.sourceId)
  }`
  return (
    <tr data-message-id={message.messageId}>
      <td class="nowrap">{formatTime(message.receivedAt)}</td>
      <td class="mono small">
        <Link to={detail}>{message.messageId}</Link>
      </td>
      <td>{message.type}</td>
      <td>{message.event ?? "—"}</td>
      <td class="mono small">{message.userId ?? message.anonymousId ?? "—"}</td>
      <td>
        {message.destinations.length === 0 && <StatusBadge status="filtered" />}
        <ul class="destinations">
          {message.destinations.map((destination) => (
            <DestinationState
              key={destination.jobId}
              destination={destination}
              messageId={message.messageId}
              onChanged={props.onChanged}
            />
          ))}
        </ul>
      </td>
    </tr>
  )
}

const DestinationState = (props: {
  readonly destination: LogDestinationView
  readonly messageId: string
  readonly onChanged: () => void
}) => {
  const { destination } = props
  const last = destination.lastAttempt
  return (
    <li>
      <StatusBadge status={destination.status} /> <span class="mono small">{destination.destinationId}</span>{" "}
      <span class="small muted">
        {destination.attempts} attempt{destination.attempts === 1 ? "" : "s"}
        {last !== null && `, last ${last.statusCode ?? "no answer"} at ${formatTime(last.at)}`}
      </span>
      {destination.status === "dead" && access.can("replay") && (
        <ReplayButton jobId={destination.jobId} messageId={props.messageId} onChanged={props.onChanged} />
      )}
    </li>
  )
}

const FilterForm = (props: { readonly filters: LogFilters; readonly sources: ReadonlyArray<SourceView> }) => {
  const [draft, setDraft] = useState(props.filters)
  const [destinations, setDestinations] = useState<ReadonlyArray<DestinationView>>([])
  const set = (change: Partial<LogFilters>) => setDraft((current) => ({ ...current, ...change }))

  // The form follows the URL when it changes, not on mount (the state starts from it).
  const synced = useRef(logPath(props.filters))
  useEffect(() => {
    const path = logPath(props.filters)
    if (synced.current === path) return
    synced.current = path
    setDraft(props.filters)
  }, [logPath(props.filters)])

  const sourceId = draft.sourceId ?? ""
  useEffect(() => {
    if (sourceId === "") return setDestinations([])
    api.destinations(sourceId).then(setDestinations, () => setDestinations([]))
  }, [sourceId])

  const submit = (event: Event) => {
    event.preventDefault()
    navigate(
      logPath({
        ...draft,
        event: draft.event.trim(),
        userId: draft.userId.trim(),
        anonymousId: draft.anonymousId.trim()
      })
    )
  }
  const toggle = (status: string, on: boolean) =>
    set({ statuses: on ? [...draft.statuses, status] : draft.statuses.filter((s) => s !== status) })
  const text = (id: string, label: string, name: "event" | "userId" | "anonymousId") => (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        class="mono"
        value={draft[name]}
        spellcheck={false}
        autoComplete="off"
        onInput={(e) => set({ [name]: e.currentTarget.value })}
      />
    </div>
  )
  const time = (id: string, label: string, name: "since" | "until") => (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        type="datetime-local"
        value={toLocalInput(draft[name])}
        onInput={(e) => set({ [name]: fromLocalInput(e.currentTarget.value) })}
      />
    </div>
  )
  return (
    <form class="search filters" onSubmit={submit} role="search" aria-label="Filter messages">
      <div class="field">
        <label for="log-source">Source</label>
        <select
          id="log-source"
          value={sourceId}
          onChange={(e) => set({ sourceId: e.currentTarget.value, destinationId: "" })}
        >
          {access.everySource() && <option value="">All sources</option>}
          {props.sources.map((s) => <option key={s.id} value={s.id}>{s.id}</option>)}
        </select>
      </div>
      <div class="field">
        <label for="log-destination">Destination</label>
        <select
          id="log-destination"
          value={draft.destinationId}
          onChange={(e) => set({ destinationId: e.currentTarget.value })}
        >
          <option value="">Any destination</option>
          {destinations.map((d) => <option key={d.id} value={d.id}>{d.id}</option>)}
        </select>
      </div>
      <div class="field">
        <label for="log-type">Type</label>
        <select id="log-type" value={draft.type} onChange={(e) => set({ type: e.currentTarget.value })}>
          <option value="">Any type</option>
          {messageTypes.map((type) => <option key={type} value={type}>{type}</option>)}
        </select>
      </div>
      {text("log-event", "Event", "event")}
      {text("log-user", "User id", "userId")}
      {text("log-anonymous", "Anonymous id", "anonymousId")}
      {time("log-since", "Received since", "since")}
      {time("log-until", "Received until", "until")}
      <fieldset class="statuses">
        <legend>Status</legend>
        {logStatuses.map((status) => (
          <label key={status} class="inline">
            <input
              type="checkbox"
              checked={draft.statuses.includes(status)}
              onChange={(e) => toggle(status, e.currentTarget.checked)}
            />
            {status}
          </label>
        ))}
      </fieldset>
      <button type="submit" class="primary">Apply filters</button>
    </form>
  )
}
