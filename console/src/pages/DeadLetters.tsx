import { useEffect, useRef, useState } from "preact/hooks"
import { access } from "../access.js"
import { api } from "../api.js"
import { Empty, ErrorBanner, formatTime, Link } from "../components/ui.js"
import type { JobView, SourceView } from "../types.js"
import { ReplayButton } from "./MessageDetail.js"

// The dead letters of a source, or of every source the key sees, each replayable (REFERENCE §7, §12).

export const DeadLetters = (props: {
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
                  {access.can("replay") && (
                    <ReplayButton jobId={job.id} messageId={job.messageId} onChanged={props.onChanged} />
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
