import type { HttpServerRequest } from "@effect/platform"
import { Data, Effect, Stream } from "effect"
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
  Effect.async<Buffer, PayloadTooLarge | UnreadableBody>((resume) => {
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

/**
 * Reads a request body, refusing it as soon as it passes `limit` bytes — before reading further
 * when `Content-Length` already says so, while streaming otherwise — and decodes gzip/deflate with
 * the limit applied to the decoded bytes (SPEC §2).
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
    const chunks: Array<Uint8Array> = []
    let size = 0
    yield* request.stream.pipe(
      Stream.mapError(() => new UnreadableBody({ reason: "the request body could not be read" })),
      Stream.runForEach((chunk) => {
        size += chunk.length
        if (size > limit) return Effect.fail(new PayloadTooLarge({ limit }))
        chunks.push(chunk)
        return Effect.void
      })
    )
    const raw = Buffer.concat(chunks, size)
    if (encoding === "identity") return raw
    return yield* inflate(encoding === "deflate" ? "deflate" : "gzip", raw, limit)
  })
