import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, Logger } from "effect"
import { HttpBody, HttpClient, HttpClientRequest, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { exportClient } from "../../src/telemetry/OtlpExport.js"
import type { OtlpTarget } from "../../src/telemetry/OtlpTarget.js"

const target: OtlpTarget = {
  url: "http://collector.test/v1/traces",
  headers: {},
  timeout: Duration.seconds(10),
  compression: "none",
  protocol: "http/json"
}

const post = (client: HttpClient.HttpClient, json: unknown) =>
  client.execute(HttpClientRequest.post(target.url).pipe(HttpClientRequest.setBody(HttpBody.jsonUnsafe(json))))

/** The exporters' client over `collector`, which answers (or not) as the test says. */
const over = (
  collector: (request: HttpClientRequest.HttpClientRequest) => Effect.Effect<Response>,
  options: Partial<OtlpTarget> = {},
  maxInFlight = 4
) =>
  exportClient({ ...target, ...options }, maxInFlight).pipe(
    Effect.provideService(
      HttpClient.HttpClient,
      HttpClient.make((request) =>
        Effect.map(collector(request), (answer) => HttpClientResponse.fromWeb(request, answer))
      )
    )
  )

describe("the OTLP exporters' HTTP client (what the library does not read of OTEL_*)", () => {
  it.effect("gives up on an export after OTEL_EXPORTER_OTLP_TIMEOUT", () =>
    Effect.gen(function*() {
      const client = yield* over(() => Effect.never, { timeout: Duration.seconds(2) })
      const export_ = yield* Effect.forkChild(Effect.flip(post(client, {})))
      yield* TestClock.adjust(Duration.seconds(2))
      const error = yield* Fiber.join(export_)
      expect(error.reason._tag).toBe("TransportError")
      expect(error.message).toContain("no answer within 2s")
    }))

  it.effect("fails an export beyond the ones in flight, and lets the next through once one is answered", () =>
    Effect.gen(function*() {
      const answer = yield* Deferred.make<void>()
      let received = 0
      const client = yield* over(
        () => Effect.as(Effect.andThen(Effect.sync(() => received++), Deferred.await(answer)), new Response("{}")),
        {},
        1
      )
      const first = yield* Effect.forkChild(post(client, { n: 1 }))
      while (received === 0) yield* Effect.yieldNow
      const dropped = yield* Effect.flip(post(client, { n: 2 }))
      expect(dropped.message).toContain("1 exports are in flight already")
      expect(received).toBe(1)
      yield* Deferred.succeed(answer, undefined)
      expect((yield* Fiber.join(first)).status).toBe(200)
      expect((yield* post(client, { n: 3 })).status).toBe(200)
      expect(received).toBe(2)
    }))

  it.effect("warns once when exports start failing, and says when they work again", () => {
    const logs: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => logs.push(`${logLevel} ${String(message)}`))
    return Effect.gen(function*() {
      const statuses = [503, 503, 500, 200, 200]
      let n = 0
      const client = yield* over(() => Effect.sync(() => new Response("{}", { status: statuses[n++] ?? 200 })))
      for (let i = 0; i < statuses.length; i++) yield* post(client, { i })
      expect(logs).toHaveLength(2)
      expect(logs[0]).toMatch(/^Warn .*exporting to http:\/\/collector\.test\/v1\/traces .*failed/)
      expect(logs[1]).toMatch(/^Info .*succeeded again after 3 failed tries/)
    }).pipe(Effect.provide(Logger.layer([logger])))
  })
})
