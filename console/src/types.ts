// The admin API's JSON shapes as the console reads and sends them (src/ingest/AdminViews.ts,
// src/ingest/ErrorBody.ts). No DOM here: the console's pure modules and their tests share it.
// The answers it only reads are the contract's own types (src/ingest/AdminSchemas.ts; types only,
// nothing of it is bundled); the source editor keeps its own looser shapes for what it edits.
import type * as EndpointContract from "../../src/ingest/AdminEndpointSchemas.js"
import type * as Contract from "../../src/ingest/AdminSchemas.js"
import type * as Secrets from "../../src/ingest/AdminSecretSchemas.js"

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
  readonly signing?: SigningScheme
  readonly signingSecrets?: ReadonlyArray<SigningSecretView>
  readonly asymmetric?: boolean
  readonly publicKey?: string
}

export type SigningScheme = "segment" | "standard" | "both"

export type SigningSecretView = typeof Secrets.SigningSecretView.Type
export type RotatedSecret = typeof Secrets.RotatedSecretView.Type

export interface SourceView {
  readonly id: string
  readonly writeKey: string
  readonly webhooks?: WebhooksView
  readonly createdAt: string | null
  readonly updatedAt: string | null
  /** The Standard Webhooks secret a save generated: only in that save's answer. */
  readonly generatedSecret?: string
}

export interface SourceInput {
  readonly writeKey: string
  readonly webhooks?: {
    readonly enabled: boolean
    readonly sharedSecret?: string
    readonly endpoints: ReadonlyArray<EndpointView>
    readonly filters?: ReadonlyArray<FilterRule>
    readonly signing?: SigningScheme
    readonly asymmetric?: boolean
  }
}

export type JobStatus = "pending" | "delivering" | "delivered" | "dead"

export type JobView = typeof Contract.JobView.Type

export type AttemptView = typeof Contract.AttemptView.Type

export type JobWithAttempts = typeof Contract.JobWithAttemptsView.Type

export interface MessageView {
  readonly messageId: string
  readonly sourceId?: string
  readonly userId?: string | null
  readonly type?: string | null
  readonly event?: string | null
  readonly receivedAt?: string | null
  readonly jobs: ReadonlyArray<JobWithAttempts>
}

export type Backlog = typeof Contract.Backlog.Type

export type UsageDay = Usage["days"][number]

export type Usage = typeof Contract.UsageView.Type

export type EndpointHealthView = typeof EndpointContract.EndpointView.Type

export type EndpointWindow = EndpointHealthView["lastDay"]

export type RecoveryResult = typeof EndpointContract.RecoveryView.Type
