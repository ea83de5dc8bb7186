import { Data, Duration, Exit } from "effect"
import type { Dispatcher } from "undici"
import type { Deadlines } from "../runtime/Deadlines.js"

// The transport's request, answer and failures, and one request in flight as undici's dispatch handler.

/** One POST. `headers` is a flat `[name, value, name, value, …]` list, sent in this order. */
export interface TransportRequest {
  /** `https://host:port`, from `requestTarget`. */
  readonly origin: string
  /** Path and query string, as configured. */
  readonly path: string
  readonly headers: ReadonlyArray<string>
  readonly body: Uint8Array
  /** This request's deadline (its destination's `timeout`); the transport's own when undefined. */
  readonly timeoutMillis?: number | undefined
}

export interface TransportResponse {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly location: string | undefined
  /** The first bytes of the body (1 KB by default) as UTF-8 text. */
  readonly snippet: string
  /** Body bytes consumed: at most `maxBodyBytes`; past that the connection is dropped. */
  readonly bodyBytes: number
  /** The body was longer than `maxBodyBytes` and the rest was not read. */
  readonly bodyTruncated: boolean
}

/** The request failed without an HTTP answer. `code` is Node's or undici's `err.code`, what classification reads. */
export class TransportError extends Data.TaggedError("TransportError")<{
  readonly code: string | undefined
  readonly message: string
  readonly cause: unknown
}> {}

/** No complete answer (headers and body) within the deadline. */
export class TransportTimeout extends Data.TaggedError("TransportTimeout")<{
  readonly timeout: Duration.Duration
  readonly waitingFor: "response" | "body"
  readonly message: string
}> {}

export type TransportFailure = TransportError | TransportTimeout

/** How a started request ended: its answer or its failure (never an interruption: a cancelled request reports nothing). */
export type TransportExit = Exit.Exit<TransportResponse, TransportFailure>

const headerValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/** The code we give an unparsable answer when undici's `HTTPParserError` carries none (undici often leaves it unset). */
const invalidResponseCode = "HPE_INVALID_RESPONSE"

/** `err.code`, looking through `cause` and AggregateError (several addresses tried) when the top error has none. */
const errorCode = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string") return code
    if ((current as { readonly name?: unknown }).name === "HTTPParserError") return invalidResponseCode
    current = current instanceof AggregateError && current.errors.length > 0
      ? current.errors[0]
      : (current as { readonly cause?: unknown }).cause
  }
  return undefined
}

const errorMessage = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * `bytes` as text up to the last whole UTF-8 character: a character cut by the snippet's byte limit is dropped, not
 * shown as U+FFFD. (A `StringDecoder` per response did the same, with an ArrayBuffer of its own for every request.)
 */
const wholeCharacters = (bytes: Buffer): string => {
  let end = bytes.length
  let lead = end - 1
  // Back over at most three continuation bytes (10xxxxxx) to the last sequence's first byte.
  while (lead > end - 4 && lead > 0 && (bytes[lead]! & 0xc0) === 0x80) lead--
  const first = bytes[lead]!
  const size = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1
  if (lead + size > end) end = lead
  return bytes.toString("utf8", 0, end)
}

const ignoreExit = (_exit: TransportExit): void => {}

/** The reason we give undici when we stop reading a body past the cap. */
class BodyCapReached extends Error {}

export interface Limits {
  readonly timeout: Duration.Duration
  readonly maxBodyBytes: number
  readonly snippetBytes: number
}

/**
 * One request in flight: undici's dispatch handler, the pending Effect's callback and the deadline in one object, so
 * a request costs one allocation here and no stream, promise, AbortController or timer. Whoever finishes first (the
 * response, an error, the deadline ticker, or interruption) wins; later calls are ignored.
 *
 * Once it has finished it lets go of undici's controller (with the parsed response headers and the request behind it),
 * the snippet's chunks and the callback (with the caller's job). A young-generation collection takes every
 * old-generation object that points at a young one as live, dead or not, and undici's objects that point at this
 * handler are often old by then: through these references everything a delivery had allocated outlived scavenges and
 * was promoted. (A heap snapshot, taken after a full collection, shows no such handler retained.) Dropping them cuts
 * what survives a scavenge and the scavenges' time (bench/NOTES.md, "Young-generation survival in delivery").
 */
export class InFlight implements Dispatcher.DispatchHandler {
  done = false
  waitingFor: "response" | "body" = "response"
  private controller: Dispatcher.DispatchController | undefined
  private pendingAbort: Error | undefined
  private status = 0
  private retryAfter: string | undefined
  private location: string | undefined
  private readonly snippet: Array<Buffer> = []
  private snippetLength = 0
  private bodyBytes = 0
  private readonly slot: number

  constructor(
    readonly deadline: number,
    private readonly timeoutMillis: number,
    private readonly limits: Limits,
    private readonly deadlines: Deadlines,
    private resume: (exit: TransportExit) => void
  ) {
    this.slot = deadlines.add(this)
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // undici hands us the controller only once the request has a socket; an abort asked for before that lands here.
    if (this.pendingAbort !== undefined) controller.abort(this.pendingAbort)
    else if (!this.done) this.controller = controller
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | Array<string> | undefined>
  ): void {
    if (this.done || statusCode < 200) return // 1xx: an interim answer, the final one follows
    this.status = statusCode
    this.retryAfter = headerValue(headers["retry-after"])
    this.location = headerValue(headers["location"])
    this.waitingFor = "body"
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return
    const room = this.limits.maxBodyBytes - this.bodyBytes
    const taken = Math.min(chunk.length, room)
    if (this.snippetLength < this.limits.snippetBytes && taken > 0) {
      const part = chunk.subarray(0, Math.min(taken, this.limits.snippetBytes - this.snippetLength))
      this.snippet.push(part)
      this.snippetLength += part.length
    }
    this.bodyBytes += taken
    if (chunk.length > room) {
      // Past the cap: answer with what we have and drop the connection instead of draining the rest (REFERENCE §8).
      this.succeed(true)
      controller.abort(new BodyCapReached("response body over the read limit"))
    }
  }

  onResponseEnd(): void {
    this.succeed(false)
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    this.finish(Exit.fail(new TransportError({ code: errorCode(error), message: errorMessage(error), cause: error })))
  }

  /** Called by the shared deadline ticker (`runtime/Deadlines`). */
  expire(): void {
    if (this.done) return
    const timeout = Duration.millis(this.timeoutMillis)
    const failure = new TransportTimeout({
      timeout,
      waitingFor: this.waitingFor,
      message: `no complete response within ${Duration.format(timeout)} (waiting for the ${this.waitingFor})`
    })
    const controller = this.controller
    this.finish(Exit.fail(failure))
    this.abort(controller, failure)
  }

  /** The caller gave up on the request (its fiber was interrupted): abort it, report to nobody. */
  cancel(): void {
    if (this.done) return
    this.done = true
    this.deadlines.remove(this.slot, this)
    const controller = this.controller
    this.letGo()
    this.abort(controller, new Error("delivery attempt interrupted"))
  }

  private abort(controller: Dispatcher.DispatchController | undefined, reason: Error): void {
    if (controller !== undefined) controller.abort(reason)
    else this.pendingAbort = reason
  }

  private letGo(): void {
    this.controller = undefined
    this.snippet.length = 0
    this.resume = ignoreExit
  }

  private succeed(truncated: boolean): void {
    if (this.done) return
    const parts = this.snippet
    const snippet = this.snippetLength === 0
      ? ""
      : wholeCharacters(parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.snippetLength))
    this.finish(Exit.succeed({
      status: this.status,
      retryAfter: this.retryAfter,
      location: this.location,
      snippet,
      bodyBytes: this.bodyBytes,
      bodyTruncated: truncated
    }))
  }

  private finish(exit: TransportExit): void {
    if (this.done) return
    this.done = true
    this.deadlines.remove(this.slot, this)
    const resume = this.resume
    this.letGo()
    resume(exit)
  }
}
