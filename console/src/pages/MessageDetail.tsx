import { useEffect, useState } from "preact/hooks"
import { access } from "../access.js"
import { api, ApiError } from "../api.js"
import { Empty, ErrorBanner, formatMs, formatTime, Link, StatusBadge } from "../components/ui.js"
import type { JobWithAttempts, MessageJobs } from "../types.js"

// One message of the log (REFERENCE §12): every job, one per destination, and each job's attempts as a timeline.

/** Replays one dead job; the server checks the scope too, this button only shows with `replay`. */
export const ReplayButton = (props: {
  readonly jobId: string
  readonly messageId: string
  readonly onChanged: () => void
}) => {
  const [state, setState] = useState<"idle" | "busy" | "done">("idle")
  const [error, setError] = useState<unknown>(undefined)
  const replay = async () => {
    setState("busy")
    setError(undefined)
    try {
      await api.replay(props.jobId)
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
        aria-label={`${state === "done" ? "Replayed" : "Replay"} message ${props.messageId}`}
      >
        {state === "done" ? "Replayed" : state === "busy" ? "Replaying…" : "Replay"}
      </button>
      <ErrorBanner error={error} />
    </span>
  )
}

const unfinished = (message: MessageJobs) =>
  message.jobs.some((job) => job.status === "pending" || job.status === "delivering")

export const MessageDetail = (
  props: { readonly messageId: string; readonly reload: number; onChanged: () => void }
) => {
  const [message, setMessage] = useState<MessageJobs | undefined>(undefined)
  const [notFound, setNotFound] = useState(false)
  const [error, setError] = useState<unknown>(undefined)
  const [refresh, setRefresh] = useState(0)

  useEffect(() => {
    let cancelled = false
    setError(undefined)
    api.message(props.messageId).then(
      (found) => {
        if (cancelled) return
        setNotFound(false)
        setMessage(found)
      },
      (failure) => {
        if (cancelled) return
        if (failure instanceof ApiError && failure.status === 404) setNotFound(true)
        else setError(failure)
      }
    )
    return () => {
      cancelled = true
    }
  }, [props.messageId, props.reload, refresh])

  // While a job is pending or being delivered, the message refreshes itself.
  useEffect(() => {
    if (message === undefined || !unfinished(message)) return
    const timer = window.setTimeout(() => setRefresh((n) => n + 1), 1500)
    return () => window.clearTimeout(timer)
  }, [message])

  const first = message?.jobs[0]
  return (
    <>
      <ErrorBanner error={error} />
      {notFound && (
        <Empty>
          No message {props.messageId} was found with deliveries (a filtered message has none; purged jobs are gone).
        </Empty>
      )}
      {message !== undefined && !notFound && (
        <article class="card message" aria-label={`Message ${message.messageId}`}>
          <header class="message-head">
            <h2 class="mono">{message.messageId}</h2>
            <dl class="facts">
              <dt>source</dt>
              <dd>
                {first === undefined ? "—" : <Link to={`/messages?sourceId=${first.sourceId}`}>{first.sourceId}</Link>}
              </dd>
              <dt>user</dt>
              <dd class="mono">{first?.userId ?? "—"}</dd>
              <dt>received</dt>
              <dd>{formatTime(first?.createdAt)}</dd>
            </dl>
          </header>
          {message.jobs.map((job) => (
            <JobBlock
              key={job.id}
              job={job}
              onChanged={() => {
                setRefresh((n) => n + 1)
                props.onChanged()
              }}
            />
          ))}
        </article>
      )}
    </>
  )
}

const JobBlock = (props: { readonly job: JobWithAttempts; readonly onChanged: () => void }) => {
  const { job } = props
  return (
    <section class="job" aria-label={`Job ${job.id}`}>
      <div class="job-head">
        <StatusBadge status={job.status} />
        <strong>{job.destinationId}</strong>
        <span class="mono small">job {job.id}</span>
        {job.kind !== "message" && <span class="muted small">{job.kind}</span>}
        <span class="small">
          {job.attemptCount} attempt{job.attemptCount === 1 ? "" : "s"}
        </span>
        {job.status === "pending" && job.nextDueAt !== null && (
          <span class="small muted">next try {formatTime(job.nextDueAt)}</span>
        )}
        {job.finishedAt !== null && <span class="small muted">finished {formatTime(job.finishedAt)}</span>}
        {job.status === "dead" && access.can("replay") && (
          <ReplayButton jobId={job.id} messageId={job.messageId} onChanged={props.onChanged} />
        )}
      </div>
      {job.lastError !== null && job.status !== "delivered" && <p class="small error-text">{job.lastError}</p>}
      {job.attempts.length === 0 && <p class="small muted">No attempt yet.</p>}
      {job.attempts.length > 0 && (
        <ol class="timeline attempts" aria-label={`Attempts of job ${job.id}`}>
          {job.attempts.map((attempt, i) => (
            <li key={i} class={`attempt outcome-${attempt.outcome}`}>
              <div class="attempt-head">
                <time dateTime={attempt.startedAt ?? undefined}>{formatTime(attempt.startedAt)}</time>
                <span class="small muted">#{attempt.attempt}</span>
                <span class="status-code">{attempt.statusCode ?? "no answer"}</span>
                <span class={`outcome outcome-${attempt.outcome}`}>{attempt.outcome}</span>
                <span class="duration">{formatMs(attempt.durationMs)}</span>
              </div>
              <div class="mono small wrap">{attempt.url}</div>
              {attempt.error !== null && (
                <p class={`small ${attempt.outcome === "aborted" ? "muted-text" : "error-text"}`}>{attempt.error}</p>
              )}
              {attempt.responseSnippet !== null && attempt.responseSnippet !== "" && (
                <pre class="snippet">{attempt.responseSnippet}</pre>
              )}
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
