import { Cause, Clock, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import type { Scope } from "effect"
import type { LookupAddress, LookupOptions } from "node:dns"
import { createSecureContext, rootCertificates } from "node:tls"
import { buildConnector } from "undici"
import { timeoutBounds } from "../domain/DestinationTiming.js"
import { ipFamily } from "../network/AddressPolicy.js"
import * as EgressPolicy from "../network/EgressPolicy.js"
import type { ResolveError } from "../network/Resolver.js"
import * as Deadlines from "../runtime/Deadlines.js"
import { InFlight, TransportError } from "./InFlight.js"
import type { Limits, TransportExit, TransportFailure, TransportRequest, TransportResponse } from "./InFlight.js"
import * as OriginPools from "./OriginPools.js"

export { TransportError, TransportTimeout } from "./InFlight.js"
export type { TransportExit, TransportFailure, TransportRequest, TransportResponse } from "./InFlight.js"

/**
 * Our HTTP client for deliveries: one POST, a 5 s deadline covering headers and body, and a bounded body read.
 * It is a service of its own (not `effect/http`'s HttpClient) because this is the hot path: one object per request,
 * no stream.
 */

export interface TransportShape {
  readonly post: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportFailure>
  /**
   * The same request as `post`, started at once: `onExit` is called once with its ending, unless it is cancelled
   * first (then it is aborted and reports nothing). Optional: an attempt awaits it in one suspension, with no
   * interruption hook of its own, and cancels it itself when interrupted; without it the attempt awaits `post`.
   */
  readonly start?: ((request: TransportRequest, onExit: (exit: TransportExit) => void) => Started) | undefined
}

/** A request started with `start`. */
export interface Started {
  /** Aborts the request if it has not ended; it reports nothing after this. */
  cancel(): void
}

export class Transport extends Context.Service<Transport, TransportShape>()("hookrelay/delivery/Transport") {}

export interface TransportOptions {
  /**
   * Extra certificate authorities (PEM) to trust besides Node's bundled roots, e.g. a test CA. Verification is always
   * on (`rejectUnauthorized: true`, whatever `NODE_TLS_REJECT_UNAUTHORIZED` says); this only adds trust anchors.
   */
  readonly ca?: string | Buffer | ReadonlyArray<string | Buffer> | undefined
  /** Deadline for the whole answer, headers and body. Default 5 s (REFERENCE §4). */
  readonly timeout?: Duration.Input | undefined
  /** Granularity of the deadline ticker: a timeout fires at most this late. Default 25 ms. */
  readonly deadlineResolution?: Duration.Input | undefined
  /** Body bytes read before the connection is dropped. Default 64 KB (REFERENCE §8). */
  readonly maxBodyBytes?: number | undefined
  /** Body bytes kept as the response snippet. Default 1 KB (REFERENCE §4). */
  readonly snippetBytes?: number | undefined
  /** Connections per origin (undici `connections`). Default: unlimited; the dispatcher bounds concurrency. */
  readonly connections?: number | undefined
  /** Idle keep-alive time of a pooled connection. Default 4 s (undici's). */
  readonly keepAliveTimeout?: Duration.Input | undefined
  /**
   * Allow connections to loopback, private, link-local and other internal addresses (REFERENCE §8). Default: the
   * `HOOKRELAY_ALLOW_PRIVATE_NETWORKS` setting, false when unset. Used by `make` / `layer`; `layerWithPolicy` takes the
   * `EgressPolicy` in context instead.
   */
  readonly allowPrivateNetworks?: boolean | undefined
}

export const defaultTimeout = Duration.millis(timeoutBounds.default)
export const defaultMaxBodyBytes = 64 * 1024
export const defaultSnippetBytes = 1024

/** Splits a configured URL into undici's origin and path; the query string is kept as configured (REFERENCE §4). */
export const requestTarget = (url: string | URL): { readonly origin: string; readonly path: string } => {
  const parsed = typeof url === "string" ? new URL(url) : url
  return { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` }
}

const secureContextWith = (ca: NonNullable<TransportOptions["ca"]>) =>
  // `ca` alone would replace Node's roots; built once here so each TLS connection does not re-parse the bundle.
  createSecureContext({ ca: [...rootCertificates, ...(typeof ca === "string" || Buffer.isBuffer(ca) ? [ca] : ca)] })

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | ReadonlyArray<LookupAddress>,
  family?: number
) => void

/** A failed guarded look-up as the error `net.connect` reports: `code` is what attempt classification reads. */
const lookupError = (cause: Cause.Cause<EgressPolicy.BlockedAddress | ResolveError>): Error => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isNone(failure)) {
    return Object.assign(new Error(`DNS lookup failed: ${Cause.pretty(cause)}`), { code: "ENOTFOUND" })
  }
  const error = failure.value
  if (error._tag === "BlockedAddress") return error.toConnectError()
  return Object.assign(new Error(error.message), { code: error.code ?? "ENOTFOUND", hostname: error.hostname })
}

/**
 * The connector of every delivery connection, where the SSRF guard sits (REFERENCE §8). An IP-literal host is checked as it
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
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    // The look-up needs no service of the context (the policy closes over its resolver): run on its own.
    Effect.runCallback(policy.resolve(hostname), {
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
  // HTTP/1.1 only, as the pools: undici 8 offers h2 in ALPN unless told not to.
  const connect = buildConnector({ ...tlsOptions, allowH2: false, lookup } as buildConnector.BuildOptions)
  return (options, callback) => {
    const blocked = policy.checkLiteral(options.hostname)
    if (blocked === undefined) return connect(options, callback)
    // undici expects the callback after connect() returned, as a socket's error event would come.
    queueMicrotask(() => callback(blocked.toConnectError(), null))
  }
}

const notStarted: Started = { cancel: () => {} }

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
 * Deadlines: every request registers itself, with `deadline = start + timeout` on Clock, with the shared deadline
 * ticker (`runtime/Deadlines`, one per Transport, waking at most every `deadlineResolution`), which fails the overdue
 * requests with `TransportTimeout` and aborts them; it runs on the layer's Clock, so `TestClock` drives it.
 */
export const makeWithPolicy = (
  options: TransportOptions = {}
): Effect.Effect<TransportShape, never, Scope.Scope | EgressPolicy.EgressPolicy> =>
  Effect.gen(function*() {
    const limits: Limits = {
      timeout: Duration.fromInputUnsafe(options.timeout ?? defaultTimeout),
      maxBodyBytes: options.maxBodyBytes ?? defaultMaxBodyBytes,
      snippetBytes: options.snippetBytes ?? defaultSnippetBytes
    }
    const timeoutMillis = Duration.toMillis(limits.timeout)
    const clock = yield* Clock.Clock
    const policy = yield* EgressPolicy.EgressPolicy
    const refusedLiteral = literalVerdicts(policy)

    const pools = yield* OriginPools.make({
      pipelining: 1,
      // undici 8 negotiates HTTP/2 by default (and holds an https pool's requests until ALPN answers): keep 1.1.
      allowH2: false,
      ...(options.connections !== undefined && { connections: options.connections }),
      ...(options.keepAliveTimeout !== undefined &&
        { keepAliveTimeout: Duration.toMillis(Duration.fromInputUnsafe(options.keepAliveTimeout)) }),
      connect: guardedConnector(policy, {
        rejectUnauthorized: true,
        ...(options.ca !== undefined && { secureContext: secureContextWith(options.ca) })
      })
    })

    const deadlines = yield* Deadlines.make({ resolution: options.deadlineResolution ?? "25 millis" })

    const refusal = (request: TransportRequest): TransportError | undefined => {
      const refused = refusedLiteral(request.origin)
      if (refused === undefined || refused === false) return undefined
      return new TransportError({ code: EgressPolicy.blockedAddressCode, message: refused.message, cause: refused })
    }

    const dispatch = (request: TransportRequest, onExit: (exit: TransportExit) => void): Started => {
      const timeout = request.timeoutMillis ?? timeoutMillis
      const entry = new InFlight(clock.currentTimeMillisUnsafe() + timeout, timeout, limits, deadlines, onExit)
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
      return Effect.callback<TransportResponse, TransportFailure>((resume) => {
        const entry = dispatch(request, resume)
        return Effect.sync(() => entry.cancel())
      })
    }

    const start = (request: TransportRequest, onExit: (exit: TransportExit) => void): Started => {
      const refused = refusal(request)
      if (refused === undefined) return dispatch(request, onExit)
      onExit(Exit.fail(refused))
      return notStarted
    }

    return Transport.of({ post, start })
  })

/** The live transport, guarded by `options.allowPrivateNetworks` (default: the setting) over the system resolver. */
export const make = (options: TransportOptions = {}): Effect.Effect<TransportShape, never, Scope.Scope> =>
  Effect.provide(
    makeWithPolicy(options),
    EgressPolicy.layer({ allowPrivateNetworks: options.allowPrivateNetworks })
  )

/** The live transport as a layer. Tests add `ca` to trust a test certificate. */
export const layer = (options: TransportOptions = {}): Layer.Layer<Transport> => Layer.effect(Transport, make(options))

/** The live transport over the `EgressPolicy` in context (the engine shares one with the save-time check). */
export const layerWithPolicy = (
  options: TransportOptions = {}
): Layer.Layer<Transport, never, EgressPolicy.EgressPolicy> => Layer.effect(Transport, makeWithPolicy(options))

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
