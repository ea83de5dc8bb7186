import * as Schema from "effect/Schema"

/** One refused field of one message; `index` is the message's position in a batch. */
export const MessageIssue = Schema.Struct({
  index: Schema.optionalKey(Schema.Number),
  path: Schema.String,
  message: Schema.String
})
export type MessageIssue = typeof MessageIssue.Type

/** Some message of the request is invalid: nothing of the request was stored (HTTP 400). */
export class InvalidMessages extends Schema.TaggedError<InvalidMessages>()("InvalidMessages", {
  errors: Schema.Array(MessageIssue)
}) {
  override get message() {
    return this.errors.map((issue) =>
      `${issue.index === undefined ? "" : `batch[${issue.index}].`}${issue.path || "(message)"}: ${issue.message}`
    ).join("; ")
  }
}

/** One message's JSON is over the per-message limit (HTTP 413). */
export class MessageTooLarge extends Schema.TaggedError<MessageTooLarge>()("MessageTooLarge", {
  index: Schema.optionalKey(Schema.Number),
  size: Schema.Number,
  limit: Schema.Number
}) {
  override get message() {
    return `message${
      this.index === undefined ? "" : ` ${this.index}`
    } is ${this.size} bytes; the limit is ${this.limit}`
  }
}

/** A batch holds more messages than allowed (HTTP 400). */
export class TooManyMessages extends Schema.TaggedError<TooManyMessages>()("TooManyMessages", {
  count: Schema.Number,
  limit: Schema.Number
}) {
  override get message() {
    return `the batch holds ${this.count} messages; the limit is ${this.limit}`
  }
}

/** No source has this id (library callers) or write key (HTTP 401). */
export class UnknownSource extends Schema.TaggedError<UnknownSource>()("UnknownSource", {
  sourceId: Schema.optionalKey(Schema.String)
}) {
  override get message() {
    return this.sourceId === undefined ? "unknown write key" : `unknown source ${this.sourceId}`
  }
}
