/**
 * Size limits of the tracking API (REFERENCE §2). A message is measured in KiB like Segment's own
 * clients measure it; a request body in decimal kilobytes, so that a "501 KB" body is refused
 * whichever unit the sender had in mind, while Segment clients (which cap batches at 480 KiB)
 * stay well inside it.
 */
export const maxMessageBytes = 32 * 1024
export const maxRequestBytes = 500 * 1000
export const maxBatchMessages = 2500
export const maxMessageIdLength = 100
/**
 * How deep a message's values may nest (objects and arrays). `JSON.parse` builds any depth, but `JSON.stringify`, which
 * measures and delivers every message, overflows the stack a few thousand levels down: a 30 KB body of nested
 * brackets was answered 500. Deeper messages are refused as invalid, naming their field.
 */
export const maxNestingDepth = 100
