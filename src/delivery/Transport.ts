import { Cause, Context, Data, Duration, Effect, Exit, Layer, Option, Runtime } from "effect"
import type { Scope } from "effect"
import type { LookupAddress, LookupOptions } from "node:dns"
import { createSecureContext, rootCertificates } from "node:tls"
import { buildConnector } from "undici"
import type { Dispatcher } from "undici"
import { ipFamily } from "../network/AddressPolicy.js"
import * as EgressPolicy from "../network/EgressPolicy.js"
import type { ResolveError } from "../network/Resolver.js"
import { Slots } from "../runtime/Slots.js"
import * as OriginPools from "./OriginPools.js"

/**
 * Our HTTP client for deliveries: one POST, a 5 s deadline covering headers and body, and a bounded body read.
 * It is a service of its own (not @effect/platform's HttpClient) because this is the hot path: see STYLE.md "HTTP".
 */

/** One POST. `headers` is a flat `[name, value, name, value, …]` list, sent in this order. */
export interface TransportRequest {
  /** `https://host:port`, from `requestTarget`. */
  readonly origin: string
  /** Path and query string, as configured. */
  readonly path: string
  readonly headers: ReadonlyArray<string>
  readonly body: Uint8Array
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

export interface TransportShape {
  readonly post: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportFailure>
}

export class Transport extends Context.Tag("hookrelay/delivery/Transport")<Transport, TransportShape>() {}

export interface TransportOptions {
  /**
   * Extra certificate authorities (PEM) to trust besides Node's bundled roots, e.g. a test CA. Verification is always
   * on (`rejectUnauthorized: true`, whatever `NODE_TLS_REJECT_UNAUTHORIZED` says); this only adds trust anchors.
   */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> | undefined
  /** Deadline for the whole answer, headers and body. Default 5 s (SPEC §4). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Granularity of the deadline ticker: a timeout fires at most this late. Default 25 ms. */
  readonly deadlineResolution?: Duration.DurationInput | undefined
  /** Body bytes read before the connection is dropped. Default 64 KB (SPEC §8). */
  readonly maxBodyBytes?: number | undefined
  /** Body bytes kept as the response snippet. Default 1 KB (SPEC §4). */
  readonly snippetBytes?: number | undefined
  /** Connections per origin (undici `connections`). Default: unlimited; the dispatcher bounds concurrency. */
  readonly connections?: number | undefined
  /** Idle keep-alive time of a pooled connection. Default 4 s (undici's). */
  readonly keepAliveTimeout?: Duration.DurationInput | undefined
  /**
   * Allow connections to loopback, private, link-local and other internal addresses (SPEC §8). Default: the
   * `HOOKRELAY_ALLOW_PRIVATE_NETWORKS` setting, false when unset. Used by `make` / `layer`; `layerWithPolicy` takes the
   * `EgressPolicy` in context instead.
   */
  readonly allowPrivateNetworks?: boolean | undefined
}

export const defaultTimeout = Duration.seconds(5)
export const defaultMaxBodyBytes = 64 * 1024
export const defaultSnippetBytes = 1024

/** Splits a configured URL into undici's origin and path; the query string is kept as configured (SPEC §4). */
export const requestTarget = (url: string | URL): { readonly origin: string; readonly path: string } => {
  const parsed = typeof url === "string" ? new URL(url) : url
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` }
}

const headerValue = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

/** The code we give an unparsable answer when undici's `HTTPParserError` carries none (undici 7 often leaves it unset). */
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

interface Limits {
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
 * was promoted. (A heap snapshot, taken after a full collection, shows no such handler retained.) Measured with the
 * dispatcher benchmark (`--trace-gc-nvp`, 40 000 jobs): 130 of 480 MB allocated survived a scavenge, and the
 * scavenges took 420 ms on the event loop plus 670 ms on V8's helper threads; with the references dropped, 36 MB,
 * 154 ms and 153 ms.
 */
class InFlight implements Dispatcher.DispatchHandler {
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
    private readonly limits: Limits,
    private readonly registry: Slots<InFlight>,
    private resume: (exit: TransportExit) => void
  ) {
    this.slot = registry.add(this)
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
      // Past the cap: answer with what we have and drop the connection instead of draining the rest (SPEC §8).
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

  /** Called by the deadline ticker. */
  expire(): void {
    if (this.done) return
    const timeout = this.limits.timeout
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
    this.registry.take(this.slot)
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
    this.registry.take(this.slot)
    const resume = this.resume
    this.letGo()
    resume(exit)
  }
}

const secureContextWith = (ca: NonNullable<TransportOptions["ca"]>) =>
  // `ca` alone would replace Node's roots; built once here so each TLS connection does not re-parse the bundle.
  createSecureContext({ ca: [...rootCertificates, ...(Array.isArray(ca) ? ca : [ca as string | Buffer])] })

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | ReadonlyArray<LookupAddress>,
  family?: number
) => void

/** A failed guarded look-up as the error `net.connect` reports: `code` is what attempt classification reads. */
const lookupError = (cause: Cause.Cause<EgressPolicy.BlockedAddress | ResolveError>): Error => {
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) {
    return Object.assign(new Error(`DNS lookup failed: ${Cause.pretty(cause)}`), { code: "ENOTFOUND" })
  }
  const error = failure.value
  if (error._tag === "BlockedAddress") return error.toConnectError()
  return Object.assign(new Error(error.message), { code: error.code ?? "ENOTFOUND", hostname: error.hostname })
}

/**
 * The connector of every delivery connection, where the SSRF guard sits (SPEC §8). An IP-literal host is checked as it
 * is (`net.connect` does no look-up for it); a host name is resolved by `EgressPolicy.resolve` — the `Resolver`
 * service, every address checked, one refused address refusing them all — through the `lookup` hook of
 * `net.connect`/`tls.connect`, so the socket connects to exactly the addresses that were checked, and a resolver that
 * answers differently the next time (DNS rebinding) is checked again at the next connection. The host name stays the
 * TLS server name: SNI and certificate verification are unchanged (always on).
 */
const guardedConnector = (
  policy: EgressPolicy.EgressPolicyShape,
  tlsOptions: buildConnector.BuildOptions
): buildConnector.connector => {
  // The look-up needs no service of the context (the policy closes over its resolver): the default runtime runs it.
  const run = Runtime.runCallback(Runtime.defaultRuntime)
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    run(policy.resolve(hostname), {
      onExit: (exit) => {
        if (Exit.isFailure(exit)) return callback(lookupError(exit.cause), [])
        const family = options.family === 4 || options.family === 6 ? options.family : 0
        const addresses = family === 0 ? exit.value : exit.value.filter((address) => address.family === family)
        const first = addresses[0]
        if (first === undefined) {
          return callback(
            Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: "ENOTFOUND" }),
            []
          )
        }
        if (options.all === true) callback(null, addresses)
        else callback(null, first.address, first.family)
      }
    })
  }
  const connect = buildConnector({ ...tlsOptions, lookup } as buildConnector.BuildOptions)
  return (options, callback) => {
    const blocked = policy.checkLiteral(options.hostname)
    if (blocked === undefined) return connect(options, callback)
    // undici expects the callback after connect() returned, as a socket's error event would come.
    queueMicrotask(() => callback(blocked.toConnectError(), null))
  }
}

/** Refusals of IP-literal origins, decided once per origin string (`false`: allowed or a host name). */
const literalVerdicts = (policy: EgressPolicy.EgressPolicyShape) => {
  const verdicts = new Map<string, EgressPolicy.BlockedAddress | false>()
  return (origin: string): EgressPolicy.BlockedAddress | false => {
    let verdict = verdicts.get(origin)
    if (verdict === undefined) {
      const host = URL.canParse(origin) ? new URL(origin).hostname : ""
      verdict = ipFamily(host) === 0 ? false : policy.checkLiteral(host) ?? false
      if (verdicts.size >= 4096) verdicts.clear()
      verdicts.set(origin, verdict)
    }
    return verdict
  }
}

/**
 * The live transport over undici pools, one per origin (`OriginPools`; never follows redirects: no redirect interceptor
 * is composed), guarded by the `EgressPolicy` in context: see `guardedConnector`. An origin whose host is a refused IP
 * literal fails at once, without undici (no connection pool is created for it).
 *
 * Deadlines: every request registers itself, with `deadline = start + timeout` on Clock, in one insertion-ordered set;
 * one ticker fiber per Transport sleeps on Clock until the earliest deadline (never less than `deadlineResolution`, so
 * a burst of expiries costs one wake-up), fails the overdue requests with `TransportTimeout` and aborts them. When
 * nothing is in flight the ticker parks on a latch. The per-request cost is a set insertion and deletion, instead of
 * the fiber race of `Effect.timeout`; the ticker runs on the layer's Clock, so `TestClock` drives it.
 */
export const makeWithPolicy = (
  options: TransportOptions = {}
): Effect.Effect<TransportShape, never, Scope.Scope | EgressPolicy.EgressPolicy> =>
  Effect.gen(function*() {
    const limits: Limits = {
      timeout: Duration.decode(options.timeout ?? defaultTimeout),
      maxBodyBytes: options.maxBodyBytes ?? defaultMaxBodyBytes,
      snippetBytes: options.snippetBytes ?? defaultSnippetBytes
    }
    const timeoutMillis = Duration.toMillis(limits.timeout)
    const resolutionMillis = Duration.toMillis(Duration.decode(options.deadlineResolution ?? "25 millis"))
    const clock = yield* Effect.clock
    const policy = yield* EgressPolicy.EgressPolicy
    const refusedLiteral = policy.allowPrivateNetworks ? undefined : literalVerdicts(policy)

    const pools = yield* OriginPools.make({
      pipelining: 1,
      ...(options.connections !== undefined && { connections: options.connections }),
      ...(options.keepAliveTimeout !== undefined &&
        { keepAliveTimeout: Duration.toMillis(Duration.decode(options.keepAliveTimeout)) }),
      connect: guardedConnector(policy, {
        rejectUnauthorized: true,
        ...(options.ca !== undefined && { secureContext: secureContextWith(options.ca) })
      })
    })

    const inFlight = new Slots<InFlight>()
    const wake = yield* Effect.makeLatch(false)

    const tick: Effect.Effect<void> = Effect.suspend(() => {
      if (inFlight.size === 0) {
        // Closed and awaited in one synchronous step: a post that lands after this opens it again.
        wake.unsafeClose()
        return wake.await
      }
      const now = clock.unsafeCurrentTimeMillis()
      let next = Infinity
      for (const request of inFlight.values()) {
        if (request.deadline <= now) request.expire()
        else if (request.deadline < next) next = request.deadline
      }
      return next === Infinity ? Effect.void : clock.sleep(Duration.millis(Math.max(next - now, resolutionMillis)))
    })
    yield* Effect.forkScoped(Effect.forever(tick))

    const refusal = (request: TransportRequest): TransportError | undefined => {
      const refused = refusedLiteral?.(request.origin)
      if (refused === undefined || refused === false) return undefined
      return new TransportError({ code: EgressPolicy.blockedAddressCode, message: refused.message, cause: refused })
    }

    const dispatch = (request: TransportRequest, onExit: (exit: TransportExit) => void): InFlight => {
      const entry = new InFlight(clock.unsafeCurrentTimeMillis() + timeoutMillis, limits, inFlight, onExit)
      if (inFlight.size === 1) wake.unsafeOpen()
      // dispatch reports synchronous failures (destroyed pool, invalid argument) through onResponseError.
      pools.dispatch({
        origin: request.origin,
        path: request.path,
        method: "POST",
        headers: request.headers as Array<string>,
        body: request.body
      }, entry)
      return entry
    }

    const post = (request: TransportRequest): Effect.Effect<TransportResponse, TransportFailure> => {
      const refused = refusal(request)
      if (refused !== undefined) return Effect.fail(refused)
      return Effect.async<TransportResponse, TransportFailure>((resume) => {
        const entry = dispatch(request, resume)
        return Effect.sync(() => entry.cancel())
      })
    }

    return Transport.of({ post })
  })

/** The live transport, guarded by `options.allowPrivateNetworks` (default: the setting) over the system resolver. */
export const make = (options: TransportOptions = {}): Effect.Effect<TransportShape, never, Scope.Scope> =>
  Effect.provide(
    makeWithPolicy(options),
    EgressPolicy.layer({ allowPrivateNetworks: options.allowPrivateNetworks })
  )

/** The live transport as a layer. Tests add `ca` to trust a test certificate. */
export const layer = (options: TransportOptions = {}): Layer.Layer<Transport> => Layer.scoped(Transport, make(options))

/** The live transport over the `EgressPolicy` in context (the engine shares one with the save-time check). */
export const layerWithPolicy = (
  options: TransportOptions = {}
): Layer.Layer<Transport, never, EgressPolicy.EgressPolicy> => Layer.scoped(Transport, makeWithPolicy(options))

/**
 * A transport from a function: tests script answers (and delays, on TestClock) per request without sockets.
 * The function gets the request and the 1-based number of the call.
 */
export const layerTest = (
  post: (request: TransportRequest, call: number) => Effect.Effect<TransportResponse, TransportFailure>
): Layer.Layer<Transport> =>
  Layer.sync(Transport, () => {
    let calls = 0
    return Transport.of({ post: (request) => Effect.suspend(() => post(request, ++calls)) })
  })

/** A response value for tests and scripted transports. */
export const response = (
  status: number,
  fields: Partial<Omit<TransportResponse, "status">> = {}
): TransportResponse => ({
  status,
  retryAfter: fields.retryAfter,
  location: fields.location,
  snippet: fields.snippet ?? "",
  bodyBytes: fields.bodyBytes ?? Buffer.byteLength(fields.snippet ?? ""),
  bodyTruncated: fields.bodyTruncated ?? false
})
