import { HttpBody, HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Option } from "effect"
import { promisify } from "node:util"
import { gzip } from "node:zlib"
import { makeFailureRun } from "../runtime/FailureRun.js"
import type { OtlpTarget, Signal } from "./OtlpTarget.js"

const gzipAsync = promisify(gzip)

// Both serializations give their body as bytes.
const compressed = (request: HttpClientRequest.HttpClientRequest) => {
  const body = request.body
  if (body._tag !== "Uint8Array") return Effect.succeed(request)
  return Effect.map(
    Effect.promise(() => gzipAsync(body.body)),
    (zipped) =>
      request.pipe(
        HttpClientRequest.setBody(HttpBody.uint8Array(zipped, body.contentType)),
        HttpClientRequest.setHeader("content-encoding", "gzip")
      )
  )
}

const transportError = (request: HttpClientRequest.HttpClientRequest, description: string) =>
  new HttpClientError.RequestError({ request, reason: "Transport", description })

/**
 * The HTTP client one signal's exporter posts with: the target's compression and timeout, at most `maxInFlight`
 * exports at once (one beyond them fails as a transport error: metrics exported more often than the timeout must not
 * pile up behind a collector that does not answer; the exporter tries it again, then drops it), and one warning when
 * exports start failing and one line when they work again.
 */
export const exportClient = (signal: Signal, target: OtlpTarget, maxInFlight: number) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const inFlight = yield* Effect.makeSemaphore(maxInFlight)
    const failures = yield* makeFailureRun(`exporting ${signal} to ${target.url} (dropped while it fails)`)
    const compressing = target.compression === "gzip" ? HttpClient.mapRequestEffect(client, compressed) : client
    return HttpClient.transform(compressing, (response, request) =>
      inFlight.withPermitsIfAvailable(1)(
        response.pipe(
          Effect.timeoutFail({
            duration: target.timeout,
            onTimeout: () => transportError(request, `no answer within ${Duration.format(target.timeout)}`)
          })
        )
      ).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(transportError(request, `${maxInFlight} exports are in flight already`)),
          onSome: Effect.succeed
        })),
        Effect.tap((answer) => answer.status < 300 ? failures.succeeded : failures.failed(`HTTP ${answer.status}`)),
        Effect.tapError((error) => failures.failed(error.message))
      ))
  })
