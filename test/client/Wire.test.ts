import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Fiber, Layer, Queue, Result } from "effect"
import { TestClock } from "effect/testing"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import { createServer as createHttpsServer } from "node:https"
import type { AddressInfo } from "node:net"
import { makeNodeHttp } from "../../src/client/ClientTransport.js"
import {
  Analytics,
  ClientClosed,
  createClient,
  InvalidMessage,
  layer,
  layerConfig,
  type Outcome,
  version
} from "../../src/client/index.js"
import { tlsFixture } from "../delivery/support.js"

interface Request {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
  /** Completes when the client hangs up before an answer. */
  readonly aborted: Deferred.Deferred<void>
}

type Answer = (request: Request, response: ServerResponse) => void

const answer200: Answer = (_, response) => {
  response.writeHead(200, { "content-type": "application/json" })
  response.end("{\"success\":true}")
}

/** A real node:http server on 127.0.0.1, port 0, for the life of the scope. */
const loopbackServer = (answer: Answer = answer200) =>
  Effect.gen(function*() {
    const requests = yield* Queue.unbounded<Request>()
    const server = yield* Effect.acquireRelease(
      Effect.callback<ReturnType<typeof createServer>>((resume) => {
        const server = createServer((incoming, response) => {
          const chunks: Array<Buffer> = []
          incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
          incoming.on("end", () => {
            const aborted = Deferred.makeUnsafe<void>()
            response.on("close", () => {
              if (!response.writableFinished) Deferred.doneUnsafe(aborted, Effect.void)
            })
            const request: Request = {
              method: incoming.method ?? "",
              url: incoming.url ?? "",
              headers: incoming.headers,
              body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
              aborted
            }
            Queue.offerUnsafe(requests, request)
            answer(request, response)
          })
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const { port } = server.address() as AddressInfo
    return { endpoint: `http://127.0.0.1:${port}`, port, next: Queue.take(requests), requests }
  })

const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`

/** One track sent alone (`flushAt: 1`) without retries to `endpoint`, its outcome pushed to `outcomes`. */
const trackOnce = (endpoint: string, outcomes: Array<Outcome>) =>
  Effect.flatMap(Analytics, (analytics) => analytics.track({ userId: "u", event: "e" })).pipe(
    Effect.provide(layer({
      writeKey: "wk",
      endpoint,
      flushAt: 1,
      maxRetries: 0,
      onOutcome: (outcome) => outcomes.push(outcome)
    }))
  )

describe("on the wire (real loopback server, node:http transport)", () => {
  it.live("POST /v1/batch with Basic auth, JSON body {batch, sentAt}", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer()
      const before = Date.now()
      yield* Effect.gen(function*() {
        const analytics = yield* Analytics
        yield* analytics.identify({ userId: "u-1", traits: { plan: "pro" } })
        yield* analytics.track({ anonymousId: "a-1", event: "Signed Up", properties: { source: "ad" } })
      }).pipe(
        Effect.provide(layer({ writeKey: "wk_live_1", endpoint: `${server.endpoint}/base/`, flushAt: 2 }))
      )
      const request = yield* server.next
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/base/v1/batch")
      expect(request.headers.authorization).toBe(basic("wk_live_1"))
      expect(request.headers["content-type"]).toBe("application/json")
      expect(request.headers["user-agent"]).toBe(`hookrelay-node/${version}`)
      expect(Object.keys(request.body)).toEqual(["batch", "sentAt"])
      const sentAt = Date.parse(request.body.sentAt)
      expect(sentAt).toBeGreaterThanOrEqual(before - 1)
      expect(sentAt).toBeLessThanOrEqual(Date.now())
      expect(request.body.batch).toEqual([
        expect.objectContaining({ type: "identify", userId: "u-1", traits: { plan: "pro" } }),
        expect.objectContaining({ type: "track", anonymousId: "a-1", event: "Signed Up", properties: { source: "ad" } })
      ])
      expect(request.body.batch[0].context).toEqual({ library: { name: "hookrelay", version } })
    }))

  it.live("the Promise client: createClient → track → close → the server has it", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* loopbackServer()
      const outcomes: Array<Outcome> = []
      yield* Effect.promise(async () => {
        const client = createClient({
          writeKey: "wk_promise",
          endpoint: server.endpoint,
          onOutcome: (outcome) => outcomes.push(outcome)
        })
        await client.track({ userId: "u-2", event: "Order Completed", properties: { total: 42 } })
        await expect(client.track({ userId: "u-2", event: "" })).rejects.toBeInstanceOf(InvalidMessage)
        await client.close()
        await expect(client.track({ userId: "u-2", event: "Late" })).rejects.toBeInstanceOf(ClientClosed)
        await client.flush() // after close: nothing more to send, it resolves as the close did
        await client.close() // again: a no-op
      })
      const request = yield* server.next
      expect(request.headers.authorization).toBe(basic("wk_promise"))
      expect(request.body.batch).toEqual([
        expect.objectContaining({ type: "track", userId: "u-2", event: "Order Completed", properties: { total: 42 } })
      ])
      // Refusals reach onOutcome too, in the order of the calls, the field named.
      expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Refused", "Success", "Refused"])
      expect(outcomes[0]).toMatchObject({ type: "track", error: { _tag: "InvalidMessage", path: "event" } })
      expect(outcomes[1]).toMatchObject({ attempts: 1 })
      expect(outcomes[2]).toMatchObject({ type: "track", error: { _tag: "ClientClosed" } })
      expect(yield* Queue.size(server.requests)).toBe(0)
    })))

  it.live("the Promise client: flush sends at once, with backpressure when asked", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* loopbackServer()
      yield* Effect.promise(async () => {
        const client = createClient({
          writeKey: "wk",
          endpoint: server.endpoint,
          flushAt: 5,
          maxQueueSize: 3,
          overflow: "backpressure"
        })
        await Promise.all(Array.from({ length: 23 }, (_, i) => client.page({ userId: `u-${i}`, name: "Home" })))
        await client.flush()
        await client.close()
        // Calls that waited for room count once queued, like the others.
        expect(client.stats()).toEqual({ held: 0, delivered: 23, dropped: 0, failed: 0 })
      })
      const batches = Array.from(yield* Queue.takeAll(server.requests), (request) => request.body.batch.length)
      expect(batches.reduce((sum, size) => sum + size, 0)).toBe(23)
      expect(Math.max(...batches)).toBeLessThanOrEqual(5)
    })))

  it.live("the Promise client: a full queue drops without rejecting and reports the drop to onOutcome", () =>
    Effect.scoped(Effect.gen(function*() {
      const held: Array<ServerResponse> = []
      const server = yield* loopbackServer((_, response) => {
        held.push(response)
      })
      const outcomes: Array<Outcome> = []
      const client = createClient({
        writeKey: "wk",
        endpoint: server.endpoint,
        flushAt: 1,
        maxInFlight: 1,
        maxQueueSize: 1,
        onOutcome: (outcome) => outcomes.push(outcome)
      })
      yield* Effect.promise(() => client.flush()) // started
      // Synchronous calls: the first is taken by the batcher, the second fills the queue (1).
      const calls = Array.from({ length: 4 }, (_, i) => client.track({ userId: `u-${i}`, event: "e" }))
      yield* Effect.promise(() => Promise.all(calls)) // none rejects
      yield* server.next // u-0 is in flight, held by the server
      expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Dropped", "Dropped"])
      // The oldest queued makes room each time: u-1 for u-2, then u-2 for u-3.
      expect(outcomes.map((outcome) => outcome._tag === "Dropped" && outcome.message.userId)).toEqual(["u-1", "u-2"])
      // Answer what the server holds, as it comes.
      yield* Effect.forkScoped(
        Effect.forever(Effect.sync(() => held.shift()?.end("{}")).pipe(Effect.andThen(Effect.sleep(5))))
      )
      yield* Effect.promise(() => client.close())
      expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Dropped", "Dropped", "Success", "Success"])
    })))

  it.live("layerConfig reads HOOKRELAY_* through Config", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer()
      const provider = ConfigProvider.fromEnv({
        env: { HOOKRELAY_WRITE_KEY: "wk_env", HOOKRELAY_ENDPOINT: server.endpoint, HOOKRELAY_FLUSH_AT: "1" }
      })
      yield* Effect.flatMap(Analytics, (analytics) => analytics.alias({ userId: "u-3", previousId: "a-3" })).pipe(
        Effect.provide(Layer.provide(layerConfig(), ConfigProvider.layer(provider)))
      )
      const request = yield* server.next
      expect(request.headers.authorization).toBe(basic("wk_env"))
      expect(request.body.batch).toEqual([expect.objectContaining({ type: "alias", userId: "u-3", previousId: "a-3" })])
    }))

  it.live("a request without an answer is aborted at the timeout and reported", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer(() => undefined) // never answers
      const outcomes: Array<Outcome> = []
      yield* Effect.flatMap(Analytics, (analytics) => analytics.track({ userId: "u", event: "e" })).pipe(
        Effect.provide(layer({
          writeKey: "wk",
          endpoint: server.endpoint,
          flushAt: 1,
          timeout: 200,
          maxRetries: 0,
          onOutcome: (outcome) => outcomes.push(outcome)
        }))
      )
      expect(outcomes).toHaveLength(1)
      const outcome = outcomes[0]!
      expect(outcome._tag === "Failure" && outcome.error._tag).toBe("RequestTimeout")
      yield* Deferred.await((yield* server.next).aborted) // the server saw the client hang up
    }))

  it.effect("the node:http transport aborts a request without an answer at its timeout on the Clock (TestClock)", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer(() => undefined) // never answers
      const transport = yield* makeNodeHttp()
      const attempt = yield* Effect.forkChild(Effect.result(transport.sendWithin!({
        url: `${server.endpoint}/v1/batch`,
        headers: { "content-type": "application/json" },
        body: Buffer.from("{\"batch\":[]}")
      }, Duration.seconds(5))))
      const request = yield* server.next
      yield* TestClock.adjust("4999 millis")
      expect(attempt.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(attempt)
      expect(Result.isFailure(result) && result.failure._tag).toBe("RequestTimeout")
      yield* Deferred.await(request.aborted)
    }))

  it.live("an error answer's body and status are reported; a refused connection is a TransportError", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer((_, response) => {
        response.writeHead(400, { "content-type": "application/json" })
        response.end("{\"success\":false,\"code\":\"invalid_message\"}")
      })
      const outcomes: Array<Outcome> = []
      const send = (endpoint: string) => trackOnce(endpoint, outcomes)
      yield* send(server.endpoint)
      expect(outcomes[0]).toMatchObject({ _tag: "Failure", status: 400 })
      const first = outcomes[0]!
      expect(first._tag === "Failure" && first.error.message).toBe(
        "HTTP 400: {\"success\":false,\"code\":\"invalid_message\"}"
      )
      yield* send("http://127.0.0.1:1") // nothing listens on port 1
      const refused = outcomes[1]!
      expect(refused._tag === "Failure" && refused.error).toMatchObject({
        _tag: "TransportError",
        code: "ECONNREFUSED",
        retryable: true
      })
    }))

  it.live("an error page is read up to 1 KB; a certificate that fails verification is a permanent TransportError", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer((_, response) => {
        response.writeHead(500, { "content-type": "text/plain" })
        response.end("x".repeat(10 * 1024 * 1024))
      })
      const tlsServer = yield* Effect.acquireRelease(
        Effect.callback<ReturnType<typeof createHttpsServer>>((resume) => {
          const server = createHttpsServer(tlsFixture, (_, response) => response.end("{}"))
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const outcomes: Array<Outcome> = []
      const send = (endpoint: string) => trackOnce(endpoint, outcomes)
      yield* send(server.endpoint)
      const errorPage = outcomes[0]!
      expect(errorPage).toMatchObject({ _tag: "Failure", status: 500 })
      expect(errorPage._tag === "Failure" && errorPage.error.message).toBe(`HTTP 500: ${"x".repeat(1024)}`)
      // The self-signed certificate is refused even where the environment turns verification off.
      const previous = process.env.NODE_TLS_REJECT_UNAUTHORIZED
      process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"
      yield* Effect.ensuring(
        send(`https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`),
        Effect.sync(() => {
          if (previous === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED
          else process.env.NODE_TLS_REJECT_UNAUTHORIZED = previous
        })
      )
      const refused = outcomes[1]!
      expect(refused._tag === "Failure" && refused.error).toMatchObject({
        _tag: "TransportError",
        code: "DEPTH_ZERO_SELF_SIGNED_CERT",
        retryable: false
      })
    }))
})
