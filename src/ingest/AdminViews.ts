import { settingsOf } from "../domain/Destinations.js"
import { maskSecret } from "../domain/Secrets.js"
import type { Destination, WebhookSettings } from "../domain/Settings.js"
import { webhooksDestinationId } from "../domain/Settings.js"
import type { SavedSource } from "../relay/Relay.js"
import type {
  JobSummary,
  JobWithAttempts,
  LogMessage,
  MessageRecord,
  StoredAttempt,
  StoredSource,
  UsageDay
} from "../relay/Relay.js"
import type * as M from "./AdminMessageSchemas.js"
import type * as S from "./AdminSchemas.js"
import type * as Src from "./AdminSourceSchemas.js"
import { signingView } from "./SigningViews.js"

const iso = (millis: number | null): string | null => (millis === null ? null : new Date(millis).toISOString())

// Static headers often carry credentials for the receiver; their values are masked like the secrets,
// whether the header's name says so (X-Api-Key, X-Auth) or its value does (`Bearer …` under any name).
const sensitiveHeader = /auth|token|secret|key|cookie|session|password|passwd|credential|signature/i
const credentialValue = /^\s*(bearer|basic|digest|token|apikey)\s/i

const headerView = (name: string, value: string) =>
  sensitiveHeader.test(name) || credentialValue.test(value) ? maskSecret(value) : value

const maskHeaders = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, headerView(name, value)]))

const webhooksView = (settings: WebhookSettings) => ({
  enabled: settings.enabled,
  ...(settings.name !== undefined && { name: settings.name }),
  hasSharedSecret: settings.sharedSecret !== undefined && settings.sharedSecret !== "",
  ...(settings.sharedSecret !== undefined && settings.sharedSecret !== "" &&
    { sharedSecret: maskSecret(settings.sharedSecret) }),
  endpoints: settings.endpoints.map((endpoint) => ({
    url: endpoint.url,
    ...(endpoint.headers !== undefined && { headers: maskHeaders(endpoint.headers) })
  })),
  // As stored, absent when never set (nothing secret in them): the console edits and sends them back.
  ...(settings.filters !== undefined && { filters: settings.filters }),
  ...(settings.subscribe !== undefined && { subscribe: settings.subscribe }),
  ...(settings.retryWindow !== undefined && { retryWindow: settings.retryWindow }),
  ...(settings.timeout !== undefined && { timeout: settings.timeout }),
  ...signingView(settings)
})

/** One destination as the admin API shows it (REFERENCE §1a), its secrets masked. */
export const destinationView = (destination: Destination): typeof Src.DestinationView.Type => ({
  id: destination.id,
  ...webhooksView(settingsOf(destination))
})

/** The destinations other than `webhooks` (REFERENCE §1a), shown beside the `webhooks` object; none: no key. */
const otherDestinations = (destinations: ReadonlyArray<Destination>) => {
  const others = destinations.filter((destination) => destination.id !== webhooksDestinationId)
  return others.length === 0
    ? {}
    : { destinations: others.map(destinationView) }
}

/**
 * A source as the admin API shows it: secrets never in full (REFERENCE §7), except a Standard Webhooks secret in the
 * answer of the save that generated it.
 */
export const sourceView = (source: StoredSource | SavedSource): typeof Src.SourceView.Type => ({
  id: source.id,
  writeKey: maskSecret(source.writeKey),
  ...(source.webhooks !== undefined && { webhooks: webhooksView(source.webhooks) }),
  ...otherDestinations(source.destinations),
  createdAt: iso(source.createdAt),
  updatedAt: iso(source.updatedAt),
  ...("generatedSecret" in source && source.generatedSecret !== undefined &&
    { generatedSecret: source.generatedSecret }),
  ...("generatedSecrets" in source && source.generatedSecrets !== undefined &&
    { generatedSecrets: source.generatedSecrets })
})

export const jobView = (job: JobSummary): typeof S.JobView.Type => ({
  id: job.id,
  sourceId: job.sourceId,
  destinationId: job.destinationId,
  messageId: job.messageId,
  userId: job.userId,
  kind: job.kind,
  status: job.status,
  createdAt: iso(job.createdAt),
  firstAttemptAt: iso(job.firstAttemptAt),
  nextDueAt: iso(job.nextDueAt),
  attemptCount: job.attemptCount,
  finishedAt: iso(job.finishedAt),
  lastError: job.lastError
})

export const attemptView = (attempt: StoredAttempt): typeof S.AttemptView.Type => ({
  url: attempt.url,
  attempt: attempt.attempt,
  startedAt: iso(attempt.startedAt),
  durationMs: attempt.durationMs,
  statusCode: attempt.statusCode,
  error: attempt.error,
  outcome: attempt.outcome,
  responseSnippet: attempt.responseSnippet
})

export const jobWithAttemptsView = (job: JobWithAttempts): typeof S.JobWithAttemptsView.Type => ({
  ...jobView(job),
  attempts: job.attempts.map(attemptView)
})

/** One message of the message log: what came in through one source, with its jobs and attempts. */
export const messageView = (message: MessageRecord): typeof S.MessageView.Type => ({
  messageId: message.messageId,
  sourceId: message.sourceId,
  userId: message.userId,
  type: message.type,
  event: message.event,
  receivedAt: iso(message.receivedAt),
  jobs: message.jobs.map(jobWithAttemptsView)
})

/** One message of the log's listing (REFERENCE §12): its fields and its state at each destination. */
export const logMessageView = (message: LogMessage): typeof M.LogMessageView.Type => ({
  messageId: message.messageId,
  sourceId: message.sourceId,
  type: message.type,
  event: message.event,
  userId: message.userId,
  anonymousId: message.anonymousId,
  receivedAt: iso(message.receivedAt),
  destinations: message.destinations.map((destination) => ({
    destinationId: destination.destinationId,
    jobId: destination.jobId,
    status: destination.status,
    attempts: destination.attempts,
    lastAttempt: destination.lastAttempt === null
      ? null
      : { statusCode: destination.lastAttempt.statusCode, at: iso(destination.lastAttempt.at) }
  }))
})

export const usageView = (
  sourceId: string,
  days: ReadonlyArray<UsageDay>,
  destinationId?: string
): typeof S.UsageView.Type => ({
  sourceId,
  ...(destinationId !== undefined && { destinationId }),
  days: days.map((day) => ({
    day: day.day,
    apiCalls: day.apiCalls,
    messages: day.messages,
    filtered: day.filtered,
    delivered: day.delivered,
    dead: day.dead,
    averageLatencyMs: day.averageLatencyMs
  }))
})
