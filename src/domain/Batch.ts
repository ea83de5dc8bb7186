import * as Result from "effect/Result"
import { InvalidMessages, type MessageIssue, MessageTooLarge, TooManyMessages } from "./IngestErrors.js"
import { maxBatchMessages, maxMessageBytes, maxNestingDepth } from "./Limits.js"
import { decodeMessage, isJsonObject, type JsonObject, type Message, type MessageType } from "./Message.js"
import { fieldNestedBeyond } from "./Nesting.js"
import { applyBatchDefaults } from "./Stamp.js"

export interface BatchDefaults {
  readonly context?: JsonObject | undefined
  readonly integrations?: JsonObject | undefined
}

export type BatchError = InvalidMessages | MessageTooLarge | TooManyMessages

const jsonByteLength = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), "utf8")

/**
 * Validates a whole request, all or nothing (REFERENCE §2): at most 2 500 messages, each at most
 * 32 KiB of JSON and valid for its type. Every invalid message is reported with its index, so a
 * client can fix them all at once. `expectedType` is set for the single-message endpoints.
 * `sizeBound` is what no message, merged with the defaults, can serialize beyond (`serializedSizeBound` of the
 * request's text); within the limit, the messages are not serialized again to be measured.
 */
export const validateBatch = (
  items: ReadonlyArray<unknown>,
  defaults: BatchDefaults = {},
  expectedType?: MessageType,
  sizeBound?: number
): Result.Result<ReadonlyArray<Message>, BatchError> => {
  if (items.length > maxBatchMessages) {
    return Result.fail(new TooManyMessages({ count: items.length, limit: maxBatchMessages }))
  }
  const single = expectedType !== undefined
  const measure = sizeBound === undefined || sizeBound > maxMessageBytes
  const messages: Array<Message> = []
  const errors: Array<MessageIssue> = []
  for (let index = 0; index < items.length; index++) {
    const item = items[index]
    const merged = isJsonObject(item) ? applyBatchDefaults(item, defaults) : item
    // Before the size is measured: serializing a value nested thousands of levels deep overflows the stack.
    const tooDeep = isJsonObject(merged) ? fieldNestedBeyond(merged, maxNestingDepth) : undefined
    if (tooDeep !== undefined) {
      const issue = { path: tooDeep, message: `is nested more than ${maxNestingDepth} levels deep` }
      errors.push(single ? issue : { index, ...issue })
      continue
    }
    const size = measure ? jsonByteLength(merged) : 0
    if (size > maxMessageBytes) {
      return Result.fail(
        new MessageTooLarge(single ? { size, limit: maxMessageBytes } : { index, size, limit: maxMessageBytes })
      )
    }
    const decoded = decodeMessage(merged, expectedType)
    if (Result.isSuccess(decoded)) messages.push(decoded.success)
    else for (const issue of decoded.failure) errors.push(single ? issue : { index, ...issue })
  }
  return errors.length > 0 ? Result.fail(new InvalidMessages({ errors })) : Result.succeed(messages)
}
