import { Context, Effect, Layer } from "effect"
import { Agent } from "undici"
import { TransportError } from "./Errors.js"

/** One POST of a batch. */
export interface TransportRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The server's answer: its status, its `Retry-After` header, and the first kilobyte of its body when not 2xx. */
export interface TransportResponse {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly body: string
}

/** Sends one request and reads its answer. Timeouts and retries are the caller's: this makes one attempt. */
export interface TransportShape {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
}

/**
 * How batches reach the server. `layerUndici` is the real one; tests provide their own layer
 * (`Layer.succeed(Transport, { send })`) to script answers and drive time with `TestClock`.
 */
export class Transport extends Context.Tag("hookrelay/client/Transport")<Transport, TransportShape>() {}

/** Options of the undici transport. */
export interface UndiciTransportOptions {
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

const readStart = async (body: AsyncIterable<Buffer>): Promise<string> => {
  const chunks: Array<Buffer> = []
  let length = 0
  // Leaving the loop early destroys the body (and its connection): a huge error page is not read.
  for await (const chunk of body) {
    chunks.push(chunk)
    length += chunk.length
    if (length >= errorBodyLimit) break
  }
  return Buffer.concat(chunks).subarray(0, errorBodyLimit).toString("utf8")
}

/**
 * A transport over an undici `Agent` that this layer owns: keep-alive connections, certificates
 * always verified (even when `NODE_TLS_REJECT_UNAUTHORIZED=0`), closed with the layer's scope.
 */
export const makeUndici = (options: UndiciTransportOptions = {}) =>
  Effect.gen(function*() {
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Agent({
          connections: options.connections ?? 4,
          pipelining: 1,
          keepAliveTimeout: options.keepAliveTimeout ?? 30_000,
          connect: { rejectUnauthorized: true }
        })
      ),
      (agent) => Effect.promise(() => agent.close().catch(() => undefined))
    )
    let cachedUrl = ""
    let target = { origin: "", path: "" }
    const targetOf = (url: string) => {
      if (url !== cachedUrl) {
        const parsed = new URL(url)
        target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` }
        cachedUrl = url
      }
      return target
    }
    const send = (request: TransportRequest) =>
      Effect.tryPromise({
        try: async (signal) => {
          const { origin, path } = targetOf(request.url)
          const response = await agent.request({
            origin,
            path,
            method: "POST",
            headers: request.headers,
            body: request.body,
            signal
          })
          const ok = response.statusCode >= 200 && response.statusCode < 300
          const body = ok ? "" : await readStart(response.body)
          if (ok) await response.body.dump()
          return {
            status: response.statusCode,
            retryAfter: headerValue(response.headers["retry-after"]),
            body
          }
        },
        catch: toTransportError
      })
    return Transport.of({ send })
  })

/** The undici transport as a layer. */
export const layerUndici = (options: UndiciTransportOptions = {}): Layer.Layer<Transport> =>
  Layer.scoped(Transport, makeUndici(options))
