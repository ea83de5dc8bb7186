import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import * as https from "node:https"
import { copyWith } from "../domain/Merge.js"
import * as Deadlines from "../runtime/Deadlines.js"
import { RequestTimeout, TransportError } from "./ClientErrors.js"

/** One POST of a batch. */
export interface TransportRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /**
   * The JSON body. The client reuses its buffer once `send` has completed (and writes each retry's
   * `sentAt` into it): copy it to keep it.
   */
  readonly body: Uint8Array
}

/** The server's answer: its status, its `Retry-After` header, and the first kilobyte of its body when not 2xx. */
export interface TransportResponse {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly body: string
}

/** Sends one request and reads its answer. Retries are the caller's: this makes one attempt. */
export interface TransportShape {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
  /**
   * `send`, given up (and the request aborted) after `timeout`, on the `Clock`. Optional: without
   * it the client races `send` against the timeout, which forks two fibers per attempt.
   */
  readonly sendWithin?: (
    request: TransportRequest,
    timeout: Duration.Duration
  ) => Effect.Effect<TransportResponse, TransportError | RequestTimeout>
}

/**
 * How batches reach the server. `layerNodeHttp` is the real one; tests provide their own layer
 * (`Layer.succeed(Transport, { send })`) to script answers and drive time with `TestClock`.
 */
export class Transport extends Context.Service<Transport, TransportShape>()("hookrelay/client/Transport") {}

/** Options of the node:http transport. */
export interface HttpTransportOptions {
  /** Connections kept open per origin; match the client's `maxInFlight`. Default 4. */
  readonly connections?: number | undefined
  /** How long an idle connection is kept for reuse, in milliseconds. Default 30 000. */
  readonly keepAliveTimeout?: number | undefined
}

const errorBodyLimit = 1024

// A certificate that fails verification stays failing: retrying cannot help.
const permanentCodes = new Set([
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_INVALID_URL",
  "UND_ERR_INVALID_ARG"
])

const toTransportError = (error: unknown): TransportError => {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined
  const code = codeOf(error) ?? codeOf(cause)
  const reason = error instanceof Error ? error.message : String(error)
  return new TransportError({
    reason: reason === "" && cause !== undefined ? cause.message : reason,
    ...(code !== undefined && { code }),
    retryable: code === undefined || !permanentCodes.has(code)
  })
}

const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined
  return typeof error.code === "string" ? error.code : undefined
}

const headerValue = (value: string | Array<string> | undefined): string | undefined =>
  Array.isArray(value) ? value[0] : value

interface Target {
  readonly module: typeof http | typeof https
  readonly agent: http.Agent
  readonly url: URL
}

type Answer = Effect.Effect<TransportResponse, TransportError | RequestTimeout>

/** Keep-alive agents for http and https (certificates always verified), destroyed with the scope. */
const acquireAgents = (options: HttpTransportOptions) => {
  const connections = options.connections ?? 4
  const agentOptions = {
    keepAlive: true,
    maxSockets: connections,
    maxFreeSockets: connections,
    // An idle kept-alive socket is closed after this long (the agent destroys timed-out free sockets).
    timeout: options.keepAliveTimeout ?? 30_000
  }
  return Effect.acquireRelease(
    Effect.sync(() => ({
      http: new http.Agent(agentOptions),
      https: new https.Agent({ ...agentOptions, rejectUnauthorized: true })
    })),
    (agents) =>
      Effect.sync(() => {
        agents.http.destroy()
        agents.https.destroy()
      })
  )
}

/** The module, agent and parsed URL for a URL; the last one is kept, as a client posts to one URL. */
const makeTargets = (agents: { readonly http: http.Agent; readonly https: https.Agent }) => {
  let cachedUrl = ""
  let cachedTarget: Target | undefined
  return (url: string): Target => {
    if (url !== cachedUrl || cachedTarget === undefined) {
      const parsed = new URL(url)
      cachedTarget = parsed.protocol === "https:"
        ? { module: https, agent: agents.https, url: parsed }
        : { module: http, agent: agents.http, url: parsed }
      cachedUrl = url
    }
    return cachedTarget
  }
}

/** Reads the answer: a 2xx to its end (its connection goes back to the pool), another status's first kilobyte. */
const readResponse = (response: http.IncomingMessage, resume: (result: Answer) => void): void => {
  const status = response.statusCode ?? 0
  const retryAfter = headerValue(response.headers["retry-after"])
  if (status >= 200 && status < 300) {
    // Read to the end so that the connection goes back to the pool.
    response.resume()
    response.once("end", () => resume(Effect.succeed({ status, retryAfter, body: "" })))
    response.once("error", (error) => resume(Effect.fail(toTransportError(error))))
    return
  }
  const chunks: Array<Buffer> = []
  let length = 0
  const done = () => {
    response.removeAllListeners("data")
    resume(Effect.succeed({
      status,
      retryAfter,
      body: Buffer.concat(chunks).subarray(0, errorBodyLimit).toString("utf8")
    }))
  }
  response.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    length += chunk.length
    // A huge error page is not read: the connection is dropped instead.
    if (length >= errorBodyLimit) {
      response.destroy()
      done()
    }
  })
  response.once("end", done)
  response.once("error", (error) => resume(Effect.fail(toTransportError(error))))
}

/**
 * A transport over Node's own `http`/`https` with keep-alive agents that this layer owns,
 * certificates always verified (even when `NODE_TLS_REJECT_UNAUTHORIZED=0`), closed with the
 * layer's scope. A client sends a few requests a second (one per batch), so the connection
 * machinery is not what costs: memory is, and node:http is already loaded where undici would add
 * RSS (and heap, which V8 multiplies into its collection threshold).
 */
export const makeNodeHttp = (options: HttpTransportOptions = {}) =>
  Effect.gen(function*() {
    const targetOf = makeTargets(yield* acquireAgents(options))
    // Request timeouts on the shared deadline ticker: `Effect.timeout` forks two fibers and a timer per request.
    const clock = yield* Clock.Clock
    const deadlines = yield* Deadlines.make()

    const post = (request: TransportRequest, timeoutMillis: number | undefined) =>
      // Interruption destroys the request through the returned finalizer: Effect.callback's `signal`
      // would cost an AbortController per request.
      Effect.callback<TransportResponse, TransportError | RequestTimeout>((answer) => {
        let answered = false
        let cancelDeadline: (() => void) | undefined
        const resume = (result: Answer) => {
          if (answered) return
          answered = true
          cancelDeadline?.()
          answer(result)
        }
        let target: Target
        try {
          target = targetOf(request.url)
        } catch (error) {
          resume(Effect.fail(toTransportError(error)))
          return
        }
        const outgoing = target.module.request(target.url, {
          method: "POST",
          agent: target.agent,
          headers: copyWith(request.headers, "content-length", String(request.body.byteLength)),
          rejectUnauthorized: true
        }, (response) => readResponse(response, resume))
        outgoing.once("error", (error) => resume(Effect.fail(toTransportError(error))))
        outgoing.end(request.body)
        if (timeoutMillis !== undefined) {
          const expire = () => {
            resume(Effect.fail(new RequestTimeout({ timeoutMillis })))
            outgoing.destroy()
          }
          const deadline = { deadline: clock.currentTimeMillisUnsafe() + timeoutMillis, expire }
          const slot = deadlines.add(deadline)
          cancelDeadline = () => deadlines.remove(slot, deadline)
        }
        return Effect.sync(() => {
          answered = true
          cancelDeadline?.()
          outgoing.destroy()
        })
      })

    return Transport.of({
      // Without deadlines there is no RequestTimeout.
      send: (request) => post(request, undefined) as Effect.Effect<TransportResponse, TransportError>,
      sendWithin: (request, timeout) => post(request, Duration.toMillis(timeout))
    })
  })

/** The node:http transport as a layer. */
export const layerNodeHttp = (options: HttpTransportOptions = {}): Layer.Layer<Transport> =>
  Layer.effect(Transport, makeNodeHttp(options))
