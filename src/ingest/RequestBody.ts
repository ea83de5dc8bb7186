import { Data, Effect, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { IncomingMessage } from "node:http"
import * as Zlib from "node:zlib"

export class PayloadTooLarge extends Data.TaggedError("PayloadTooLarge")<{ readonly limit: number }> {}
export class UnreadableBody extends Data.TaggedError("UnreadableBody")<{ readonly reason: string }> {}
export class UnsupportedEncoding extends Data.TaggedError("UnsupportedEncoding")<{ readonly encoding: string }> {}

const hasZlibHeader = (bytes: Buffer): boolean =>
  bytes.length >= 2 && (bytes[0]! & 0x0f) === 0x08 && ((bytes[0]! << 8) | bytes[1]!) % 31 === 0

const inflate = (
  encoding: "gzip" | "deflate",
  compressed: Buffer,
  limit: number
): Effect.Effect<Buffer, PayloadTooLarge | UnreadableBody> =>
  Effect.callback<Buffer, PayloadTooLarge | UnreadableBody>((resume) => {
    // maxOutputLength makes zlib stop as soon as the decoded size passes the limit: a compression
    // bomb costs at most `limit` bytes of memory.
    const options = { maxOutputLength: limit + 1 }
    const done = (error: Error | null, decoded: Buffer) => {
      if (error !== null) {
        const code = (error as NodeJS.ErrnoException).code
        resume(
          code === "ERR_BUFFER_TOO_LARGE"
            ? Effect.fail(new PayloadTooLarge({ limit }))
            : Effect.fail(new UnreadableBody({ reason: `the ${encoding} body could not be decoded` }))
        )
      } else if (decoded.length > limit) {
        resume(Effect.fail(new PayloadTooLarge({ limit })))
      } else {
        resume(Effect.succeed(decoded))
      }
    }
    if (encoding === "gzip") Zlib.gunzip(compressed, options, done)
    // "deflate" is zlib-wrapped by the standard, yet some clients send raw DEFLATE under that name.
    else if (hasZlibHeader(compressed)) Zlib.inflate(compressed, options, done)
    else Zlib.inflateRaw(compressed, options, done)
  })

const contentEncoding = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-encoding"] ?? "identity").trim().toLowerCase()

const unreadable = () => new UnreadableBody({ reason: "the request body could not be read" })

/** Any platform's request: its body as an Effect `Stream`. */
const readStream = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number
): Effect.Effect<Buffer, PayloadTooLarge | UnreadableBody> =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    return request.stream.pipe(
      Stream.mapError(unreadable),
      Stream.runForEach((chunk) => {
        size += chunk.length
        if (size > limit) return Effect.fail(new PayloadTooLarge({ limit }))
        chunks.push(chunk)
        return Effect.void
      }),
      Effect.map(() => Buffer.concat(chunks, size))
    )
  })

/**
 * A Node request (NodeHttpServer): its body read from the `IncomingMessage`'s events directly. The `Stream` path
 * costs a channel, a queue and fibers per request, a large share of a small request's time; the behaviour is the
 * same: refused as soon as `limit` is passed (the rest is not read: the request is destroyed, as the Stream's
 * finalizer does), unreadable when it fails or closes before its end.
 */
const readIncoming = (
  incoming: IncomingMessage,
  limit: number
): Effect.Effect<Buffer, PayloadTooLarge | UnreadableBody> =>
  Effect.callback<Buffer, PayloadTooLarge | UnreadableBody>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const detach = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("error", onFailure)
      incoming.off("close", onFailure)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) {
        chunks.push(chunk)
        return
      }
      detach()
      incoming.destroy()
      resume(Effect.fail(new PayloadTooLarge({ limit })))
    }
    const onEnd = () => {
      detach()
      resume(Effect.succeed(Buffer.concat(chunks, size)))
    }
    const onFailure = () => {
      detach()
      resume(Effect.fail(unreadable()))
    }
    incoming.on("data", onData)
    incoming.once("end", onEnd)
    incoming.once("error", onFailure)
    incoming.once("close", onFailure)
    return Effect.sync(detach)
  })

/**
 * Reads a request body, refusing it as soon as it passes `limit` bytes — before reading further
 * when `Content-Length` already says so, while streaming otherwise — and decodes gzip/deflate with
 * the limit applied to the decoded bytes (REFERENCE §2).
 */
export const readLimitedBody = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number
): Effect.Effect<Buffer, PayloadTooLarge | UnreadableBody | UnsupportedEncoding> =>
  Effect.gen(function*() {
    const encoding = contentEncoding(request)
    if (encoding !== "identity" && encoding !== "gzip" && encoding !== "deflate" && encoding !== "x-gzip") {
      return yield* new UnsupportedEncoding({ encoding })
    }
    const declared = Number(request.headers["content-length"])
    // A compressed body larger than the decoded limit cannot be a JSON document that fits in it.
    if (Number.isFinite(declared) && declared > limit) return yield* new PayloadTooLarge({ limit })
    const raw = request.source instanceof IncomingMessage && !request.source.readableEnded
      ? yield* readIncoming(request.source, limit)
      : yield* readStream(request, limit)
    if (encoding === "identity") return raw
    return yield* inflate(encoding === "deflate" ? "deflate" : "gzip", raw, limit)
  })
