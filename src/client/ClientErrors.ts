import * as Schema from "effect/Schema"
import { FieldIssue } from "../domain/Issues.js"
import { MessageType } from "../domain/Message.js"

const describeIssues = (issues: ReadonlyArray<FieldIssue>): string =>
  issues.map((issue) => issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`).join("; ")

/**
 * A call's fields break a rule of the tracking API (REFERENCE §2): the same rules, from the same
 * schemas, as the server applies. `path` names the first offending field (`""` for the whole
 * message); `issues` lists every one. Nothing was queued.
 */
export class InvalidMessage extends Schema.TaggedError<InvalidMessage>("hookrelay/client/InvalidMessage")(
  "InvalidMessage",
  {
    type: MessageType,
    path: Schema.String,
    issues: Schema.Array(FieldIssue)
  }
) {
  override get message(): string {
    return `invalid ${this.type} call: ${describeIssues(this.issues)}`
  }
}

/**
 * The message's JSON, as it would be sent, is over `limit` bytes (32 KiB, REFERENCE §2); `path` names
 * its largest field, where the bytes are. Nothing was queued.
 */
export class MessageTooLarge extends Schema.TaggedError<MessageTooLarge>("hookrelay/client/MessageTooLarge")(
  "MessageTooLarge",
  {
    type: MessageType,
    messageId: Schema.String,
    path: Schema.String,
    size: Schema.Number,
    limit: Schema.Number
  }
) {
  override get message(): string {
    return `${this.type} message ${this.messageId} is ${this.size} bytes, over the limit of ${this.limit} bytes (largest field: ${this.path})`
  }
}

/** The client was closed (its scope ended, or `close()` was called): it accepts no more calls. */
export class ClientClosed extends Schema.TaggedError<ClientClosed>("hookrelay/client/ClientClosed")(
  "ClientClosed",
  {}
) {
  override get message(): string {
    return "the hookrelay client is closed"
  }
}

/**
 * Why a call was refused: its message breaks a rule, is too large, or the client is closed. Each
 * refusal fails the call (its Effect fails, its Promise rejects) and is reported as a `Refused`
 * outcome. A message dropped because the queue is full is not a refusal (see `Outcome.Dropped`).
 */
export type CallError = InvalidMessage | MessageTooLarge | ClientClosed

/** The client's options were refused; `issues` names each offending option. */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>("hookrelay/client/InvalidOptions")(
  "InvalidOptions",
  { issues: Schema.Array(FieldIssue) }
) {
  override get message(): string {
    return `invalid hookrelay client options: ${describeIssues(this.issues)}`
  }
}

/**
 * The request could not be made or was cut short: connection refused or reset, DNS failure, TLS
 * failure. `retryable` is false for failures a retry cannot fix (an invalid certificate).
 */
export class TransportError extends Schema.TaggedError<TransportError>("hookrelay/client/TransportError")(
  "TransportError",
  {
    reason: Schema.String,
    code: Schema.optional(Schema.String),
    retryable: Schema.Boolean
  }
) {
  override get message(): string {
    return this.code === undefined ? this.reason : `${this.reason} (${this.code})`
  }
}

/** The server did not answer within the request timeout. Retryable. */
export class RequestTimeout extends Schema.TaggedError<RequestTimeout>("hookrelay/client/RequestTimeout")(
  "RequestTimeout",
  { timeoutMillis: Schema.Number }
) {
  override get message(): string {
    return `no answer within ${this.timeoutMillis} ms`
  }
}

/**
 * The server answered with a status other than 2xx. 5xx, 408 and 429 are retryable, other statuses
 * are not. `retryAfterMillis` is the server's `Retry-After`, when it sent a usable one; `body`
 * holds the first kilobyte of the answer.
 */
export class HttpError extends Schema.TaggedError<HttpError>("hookrelay/client/HttpError")(
  "HttpError",
  {
    status: Schema.Number,
    body: Schema.String,
    retryAfterMillis: Schema.optional(Schema.Number)
  }
) {
  get retryable(): boolean {
    return this.status >= 500 || this.status === 429 || this.status === 408
  }

  override get message(): string {
    return `HTTP ${this.status}${this.body === "" ? "" : `: ${this.body}`}`
  }
}

/** Why one attempt at sending a batch failed. */
export type SendError = TransportError | RequestTimeout | HttpError
