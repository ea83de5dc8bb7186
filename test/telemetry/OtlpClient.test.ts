import { HttpBody, HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, TestClock } from "effect"
import { gunzipSync } from "node:zlib"
import { exportClient } from "../../src/telemetry/OtlpClient.js"
import type { OtlpTarget } from "../../src/telemetry/OtlpTarget.js"

const target: OtlpTarget = {
  url: "http://collector.test/v1/traces",
  headers: {},
  timeout: Duration.seconds(10),
  compression: "none",
  protocol: "http/json"
}

const post = (client: HttpClient.HttpClient, json: unknown) =>
  client.execute(HttpClientRequest.post(target.url).pipe(HttpClientRequest.setBody(HttpBody.unsafeJson(json))))

/** The exporter's client over `collector`, which answers (or not) as the test says. */
const over = (
  collector: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<Response>,
  options: Partial<OtlpTarget> = {},
  maxInFlight = 4
) =>
  exportClient("traces", { ...target, ...options }, maxInFlight).pipe(
    Effect.provideService(
      HttpClient.HttpClient,
      HttpClient.make((request) =>
        Effect.map(collector(request), (answer) => HttpClientResponse.fromWeb(request, answer))
      )
    )
  )

describe("the OTLP exporter's HTTP client", () => {
  it.effect("gzips the body when OTEL_EXPORTER_OTLP_COMPRESSION is gzip, and leaves it as it is otherwise", () =>
    Effect.gen(function*() {
      const seen: Array<{ encoding: string | undefined; body: Uint8Array }> = []
      const collector = (request: HttpClientRequest.HttpClientRequest) =>
        Effect.sync(() => {
          if (request.body._tag === "Uint8Array") {
            seen.push({ encoding: request.headers["content-encoding"], body: request.body.body })
          }
          return new Response("{}")
        })
      yield* post(yield* over(collector, { compression: "gzip" }), { resourceSpans: [1, 2] })
      yield* post(yield* over(collector), { resourceSpans: [3] })
      expect(seen[0]!.encoding).toBe("gzip")
      expect(JSON.parse(gunzipSync(seen[0]!.body).toString("utf8"))).toStrictEqual({ resourceSpans: [1, 2] })
      expect(seen[1]!.encoding).toBeUndefined()
      expect(JSON.parse(new TextDecoder().decode(seen[1]!.body))).toStrictEqual({ resourceSpans: [3] })
    }))

  it.effect("gives up on an export after the timeout", () =>
    Effect.gen(function*() {
      const client = yield* over(() => Effect.never, { timeout: Duration.seconds(2) })
      const export_ = yield* Effect.fork(Effect.flip(post(client, {})))
      yield* TestClock.adjust(Duration.seconds(2))
      const error = yield* Fiber.join(export_)
      expect(error._tag).toBe("RequestError")
      expect(error.message).toContain("no answer within 2s")
    }))

  it.effect("drops an export beyond the ones in flight, and lets the next through once one is answered", () =>
    Effect.gen(function*() {
      const answer = yield* Deferred.make<void>()
      let received = 0
      const client = yield* over(
        () => Effect.as(Effect.zipRight(Effect.sync(() => received++), Deferred.await(answer)), new Response("{}")),
        {},
        1
      )
      const first = yield* Effect.fork(post(client, { n: 1 }))
      while (received === 0) yield* Effect.yieldNow()
      const dropped = yield* Effect.flip(post(client, { n: 2 }))
      expect(dropped.message).toContain("1 exports are in flight already")
      expect(received).toBe(1)
      yield* Deferred.succeed(answer, undefined)
      expect((yield* Fiber.join(first)).status).toBe(200)
      expect((yield* post(client, { n: 3 })).status).toBe(200)
      expect(received).toBe(2)
    }))
})
