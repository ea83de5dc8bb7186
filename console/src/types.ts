// The admin API's JSON shapes as the console reads and sends them (src/ingest/AdminViews.ts,
// src/ingest/ErrorBody.ts). No DOM here: the console's pure modules and their tests share it.

export interface FieldIssue {
  readonly path: string
  readonly message: string
  readonly index?: number
}

export interface EndpointView {
  readonly url: string
  readonly headers?: Readonly<Record<string, string>>
}

/** Any JSON value; the editor has inputs for scalars and a JSON field for the rest. */
export type PropertyValue = string | number | boolean | null | ReadonlyArray<unknown> | {
  readonly [key: string]: unknown
}

export interface FilterRule {
  readonly if: {
    readonly type?: ReadonlyArray<string>
    readonly event?: ReadonlyArray<string>
    readonly properties?: Readonly<Record<string, PropertyValue>>
  }
  readonly then: "drop"
}

export interface WebhooksView {
  readonly enabled: boolean
  readonly hasSharedSecret: boolean
  readonly sharedSecret?: string
  readonly endpoints: ReadonlyArray<EndpointView>
  readonly filters?: ReadonlyArray<FilterRule>
}

export interface SourceView {
  readonly id: string
  readonly writeKey: string
  readonly webhooks?: WebhooksView
  readonly createdAt: string | null
  readonly updatedAt: string | null
}

export interface SourceInput {
  readonly writeKey: string
  readonly webhooks?: {
    readonly enabled: boolean
    readonly sharedSecret?: string
    readonly endpoints: ReadonlyArray<EndpointView>
    readonly filters?: ReadonlyArray<FilterRule>
  }
}

export type JobStatus = "pending" | "delivering" | "delivered" | "dead"

export interface JobView {
  readonly id: string
  readonly sourceId: string
  readonly messageId: string
  readonly userId: string | null
  readonly kind: string
  readonly status: JobStatus
  readonly createdAt: string | null
  readonly firstAttemptAt: string | null
  readonly nextDueAt: string | null
  readonly attemptCount: number
  readonly finishedAt: string | null
  readonly lastError: string | null
}

export interface AttemptView {
  readonly url: string
  readonly attempt: number
  readonly startedAt: string | null
  readonly durationMs: number | null
  readonly statusCode: number | null
  readonly error: string | null
  readonly outcome: string
  readonly responseSnippet: string | null
}

export interface JobWithAttempts extends JobView {
  readonly attempts: ReadonlyArray<AttemptView>
}

export interface MessageView {
  readonly messageId: string
  readonly sourceId?: string
  readonly userId?: string | null
  readonly type?: string | null
  readonly event?: string | null
  readonly receivedAt?: string | null
  readonly jobs: ReadonlyArray<JobWithAttempts>
}

export interface Backlog {
  readonly pending: number
  readonly delivering: number
  readonly delivered: number
  readonly dead: number
}

export interface UsageDay {
  readonly day: string
  readonly apiCalls: number
  readonly messages: number
  readonly filtered: number
  readonly delivered: number
  readonly dead: number
  readonly averageLatencyMs: number | null
}

export interface Usage {
  readonly sourceId: string
  readonly days: ReadonlyArray<UsageDay>
}
