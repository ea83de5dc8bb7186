import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { deliver } from "../../src/delivery/Deliver.js"
import type { DeliveryJob } from "../../src/delivery/Deliver.js"
import { AllEndpointsFailed, DeliveryResult, EndpointState } from "../../src/delivery/DeliveryResult.js"
import { sign } from "../../src/delivery/Signature.js"
import * as Transport from "../../src/delivery/Transport.js"
import {
  adjustUntil,
  captureLogs,
  closedPort,
  encode,
  realWait,
  recorder,
  startServer,
  tlsFixture,
  waitUntil
} from "./support.js"

const body = encode(`{"version":1,"type":"track","messageId":"m-1","event":"Signed Up ✓","context":{}}`)

const job = (url: string, fields: Partial<DeliveryJob> = {}): DeliveryJob => ({
  jobId: "job-1",
  messageId: "m-1",
  body,
  settings: { sharedSecret: "s3cret", endpoints: [{ url }] },
  ...fields
})

/** Pairs of a raw header list, in order. */
const headerPairs = (raw: ReadonlyArray<string>) =>
  Array.from({ length: raw.length / 2 }, (_, i) => [raw[2 * i]!, raw[2 * i + 1]!] as const)

describe("Transport and attempt over real sockets", () => {
  it.live("sends the signed bytes with the headers of REFERENCE §4, in order, to the URL as configured", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => res.writeHead(200).end("ok"))
      const { records, sink } = recorder()
      const url = `${server.url}/hooks/in?team=growth&x=1`
      const result = yield* deliver(
        job(url, {
          settings: {
            sharedSecret: "s3cret",
            endpoints: [{ url, headers: { Authorization: "Bearer abc", "X-Team": "growth" } }]
          }
        }),
        { recordAttempt: sink }
      ).pipe(Effect.provide(Transport.layer()))

      expect(result).toStrictEqual(DeliveryResult.Delivered({ url, status: 200, attempts: 1 }))
      expect(server.requests).toHaveLength(1)
      const request = server.requests[0]!
      expect(request.method).toBe("POST")
      expect(request.url).toBe("/hooks/in?team=growth&x=1")
      expect(new Uint8Array(request.body)).toStrictEqual(body)
      expect(request.headers["x-signature"]).toBe(sign("s3cret", request.body))
      expect(request.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/)
      // Ours first, in the order REFERENCE §4 lists them, then the static headers (undici adds host and content-length around them).
      const ours = headerPairs(request.rawHeaders).filter(([name]) =>
        !["host", "content-length", "connection"].includes(name.toLowerCase())
      )
      expect(ours).toStrictEqual([
        ["User-Agent", "hookrelay/1.0"],
        ["Content-Type", "application/json"],
        ["X-Signature", sign("s3cret", body)],
        ["Authorization", "Bearer abc"],
        ["X-Team", "growth"]
      ])
      expect(request.headers["content-length"]).toBe(String(body.length))
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({
        jobId: "job-1",
        url,
        attempt: 1,
        outcome: "success",
        statusCode: 200,
        responseSnippet: "ok"
      })
    }))

  it.live("sends no X-Signature without a secret, or with an empty one", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => res.writeHead(204).end())
      for (
        const settings of [{ endpoints: [{ url: server.url }] }, { sharedSecret: "", endpoints: [{ url: server.url }] }]
      ) {
        const result = yield* deliver(job(server.url, { settings })).pipe(Effect.provide(Transport.layer()))
        expect(result).toStrictEqual(DeliveryResult.Delivered({ url: server.url, status: 204, attempts: 1 }))
      }
      expect(server.requests).toHaveLength(2)
      for (const request of server.requests) {
        expect(request.headers["x-signature"]).toBeUndefined()
        expect(request.headers["user-agent"]).toBe("hookrelay/1.0")
        expect(request.headers["content-type"]).toBe("application/json")
      }
    }))

  it.live("reads at most 64 KB of a 10 MB answer, keeps a 1 KB snippet, and drops the connection", () =>
    Effect.gen(function*() {
      // Paced in 64 KB chunks, one a millisecond, while the connection lasts: kernel socket buffers on loopback can
      // swallow 10 MB written at once, which would hide whether the client hung up.
      const chunk = Buffer.alloc(64 * 1024, "a")
      const total = 10 * 1024 * 1024
      const written: Array<number> = []
      const server = yield* startServer((_, res, index) => {
        written[index] = 0
        res.writeHead(200, { "content-length": String(total) })
        const pump = () => {
          if (res.destroyed || written[index]! >= total) return
          res.write(chunk)
          written[index]! += chunk.length
          setTimeout(pump, 1)
        }
        pump()
      })
      const transport = yield* Transport.make()
      const response = yield* transport.post({
        ...Transport.requestTarget(server.url),
        headers: ["Content-Type", "application/json"],
        body
      })
      expect(response.status).toBe(200)
      expect(response.snippet).toBe("a".repeat(1024))
      expect(response.bodyBytes).toBe(64 * 1024)
      expect(response.bodyTruncated).toBe(true)
      yield* waitUntil(() => server.requests[0]?.aborted === true, "the server saw the connection dropped")
      expect(written[0]).toBeLessThan(total / 4)

      // Through an attempt: the status is recorded, the snippet is the first 1 KB.
      const { records, sink } = recorder()
      const result = yield* deliver(job(server.url), { recordAttempt: sink }).pipe(Effect.provide(Transport.layer()))
      expect(result).toStrictEqual(DeliveryResult.Delivered({ url: server.url, status: 200, attempts: 1 }))
      expect(records[0]).toMatchObject({ outcome: "success", statusCode: 200, responseSnippet: "a".repeat(1024) })
    }))

  it.live("keeps the whole body of a small answer and reuses the connection", () =>
    Effect.gen(function*() {
      const sockets = new Set<unknown>()
      const server = yield* startServer((_, res) => {
        sockets.add(res.socket)
        res.writeHead(500, { "content-type": "text/plain" }).end("é".repeat(600))
      })
      const transport = yield* Transport.make()
      const request = { ...Transport.requestTarget(server.url), headers: [], body }
      const first = yield* transport.post(request)
      yield* realWait(20) // undici returns the socket to its pool just after the response ends
      const second = yield* transport.post(request)
      expect(first.status).toBe(500)
      expect(first.bodyBytes).toBe(1200)
      expect(first.bodyTruncated).toBe(false)
      // 1 KB of bytes, cut at a character boundary: 512 two-byte characters.
      expect(first.snippet).toBe("é".repeat(512))
      expect(second.status).toBe(500)
      expect(sockets.size).toBe(1)
    }))

  it.live("cuts the snippet before a character its 1 KB limit would split", () =>
    Effect.gen(function*() {
      // 400 three-byte characters: the first 1 024 bytes end one byte into the 342nd.
      const server = yield* startServer((_, res) => res.writeHead(500).end("€".repeat(400)))
      const transport = yield* Transport.make()
      const response = yield* transport.post({ ...Transport.requestTarget(server.url), headers: [], body })
      expect(response.bodyBytes).toBe(1200)
      expect(response.snippet).toBe("€".repeat(341))
    }))

  it.live("fails on a self-signed certificate before any HTTP request: permanent, no retry", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => res.writeHead(200).end(), { tls: tlsFixture })
      const { records, sink } = recorder()
      const firstAttemptAt = yield* Clock.currentTimeMillis
      const exit = yield* deliver(job(server.url, { firstAttemptAt }), { recordAttempt: sink }).pipe(
        Effect.provide(Transport.layer()),
        Effect.exit
      )
      // Node's message for the code; Node 24 appends a hint about --use-system-ca to it.
      const reason = records[0]?.error ?? ""
      expect(reason).toMatch(/^TLS: invalid certificate \(DEPTH_ZERO_SELF_SIGNED_CERT\): self-signed certificate(;|$)/)
      expect(exit).toStrictEqual(Exit.fail(
        new AllEndpointsFailed({
          jobId: "job-1",
          messageId: "m-1",
          firstAttemptAt,
          endpoints: [
            EndpointState.Retired({
              url: server.url,
              attempts: 1,
              why: "permanent",
              lastOutcome: AttemptOutcome.Permanent({ reason, code: "DEPTH_ZERO_SELF_SIGNED_CERT" })
            })
          ]
        })
      ))
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({ outcome: "permanent", error: reason })
      expect(records[0]!.statusCode).toBeNull()
      expect(server.handlerCalls).toBe(0)
    }))

  it.live("succeeds over TLS when the certificate is trusted as a CA: verification stays on", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => res.writeHead(200).end("secure"), { tls: tlsFixture })
      const trusting = Transport.layer({ ca: tlsFixture.cert })
      for (const url of [server.url, `https://localhost:${server.port}/`]) {
        const result = yield* deliver(job(url)).pipe(Effect.provide(trusting))
        expect(result).toStrictEqual(DeliveryResult.Delivered({ url, status: 200, attempts: 1 }))
      }
      expect(server.handlerCalls).toBe(2)
      expect(new Uint8Array(server.requests[0]!.body)).toStrictEqual(body)
    }))

  it.live("gives up at once on 404: one attempt, permanent", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => res.writeHead(404).end("no such hook"))
      const { records, sink } = recorder()
      const error = yield* deliver(job(server.url), { recordAttempt: sink }).pipe(
        Effect.provide(Transport.layer()),
        Effect.flip
      )
      expect(error.endpoints).toStrictEqual([
        EndpointState.Retired({
          url: server.url,
          attempts: 1,
          why: "permanent",
          lastOutcome: AttemptOutcome.Permanent({ reason: "HTTP 404", status: 404 })
        })
      ])
      expect(server.requests).toHaveLength(1)
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({ outcome: "permanent", statusCode: 404, responseSnippet: "no such hook" })
    }))

  it.live("does not follow a 302: one attempt, permanent, the target never hit", () =>
    Effect.gen(function*() {
      const server = yield* startServer((request, res) => {
        if (request.url === "/moved") res.writeHead(200).end()
        else res.writeHead(302, { location: "/moved" }).end()
      })
      const url = `${server.url}/hook`
      const error = yield* deliver(job(url)).pipe(Effect.provide(Transport.layer()), Effect.flip)
      expect(error.endpoints).toStrictEqual([
        EndpointState.Retired({
          url,
          attempts: 1,
          why: "permanent",
          lastOutcome: AttemptOutcome.Permanent({
            reason: "HTTP 302 redirect to /moved (redirects are not followed)",
            status: 302
          })
        })
      ])
      expect(server.requests.map((request) => request.url)).toStrictEqual(["/hook"])
    }))

  it.effect("retries a refused connection (a real closed port), after the backoff on TestClock", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const url = `http://127.0.0.1:${port}/hook`
      const { records, sink } = recorder()
      const fiber = yield* deliver(job(url), { recordAttempt: sink }).pipe(
        Effect.provide(Transport.layer()),
        Effect.forkChild
      )
      yield* waitUntil(() => records.length === 1, "the first attempt is recorded")
      expect(records[0]).toMatchObject({ url, attempt: 1, outcome: "retryable" })
      expect(records[0]!.error).toMatch(/^connection refused \(ECONNREFUSED\): /)
      yield* TestClock.adjust("799 millis")
      yield* realWait(20)
      expect(records).toHaveLength(1)
      yield* adjustUntil(() => records.length === 2, "a second attempt is recorded", "50 millis", 20)
      expect(records[1]).toMatchObject({ attempt: 2, outcome: "retryable" })
      expect(records[1]!.startedAt - records[0]!.startedAt).toBeGreaterThanOrEqual(800)
      expect(records[1]!.startedAt - records[0]!.startedAt).toBeLessThanOrEqual(1250)
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("times out a receiver that never answers at 5 s, logs it, aborts the request and retries", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => {})
      const logs = captureLogs()
      const { records, sink } = recorder()
      const url = `${server.url}/slow?x=1`
      const fiber = yield* deliver(job(url, { messageId: "m-slow" }), { recordAttempt: sink }).pipe(
        Effect.provide(Layer.merge(Transport.layer(), logs.layer)),
        Effect.forkChild
      )
      yield* waitUntil(() => server.requests.length === 1, "the receiver holds the first request")

      yield* TestClock.adjust("4999 millis")
      yield* realWait(20)
      expect(records).toStrictEqual([])
      expect(server.requests[0]!.aborted).toBe(false)

      yield* TestClock.adjust("1 millis")
      yield* waitUntil(() => records.length === 1, "the timed-out attempt is recorded")
      const timeout = "timeout: no complete response within 5s (waiting for the response)"
      expect(records[0]).toStrictEqual({
        jobId: "job-1",
        url,
        attempt: 1,
        startedAt: 0,
        durationMs: 5000,
        statusCode: null,
        error: timeout,
        outcome: "retryable",
        responseSnippet: null
      })
      yield* waitUntil(() => server.requests[0]!.aborted, "the server saw the timed-out request aborted")
      const warnings = logs.lines.filter((line) => line.level === "WARN")
      expect(warnings).toStrictEqual([{
        level: "WARN",
        message: "delivery attempt timed out: no complete response within 5s (waiting for the response)",
        annotations: { messageId: "m-slow", url, attempt: 1, jobId: "job-1" }
      }])

      yield* adjustUntil(() => server.requests.length === 2, "the receiver gets the retry", "50 millis", 30)
      const retryAt = yield* Clock.currentTimeMillis
      expect(retryAt).toBeGreaterThanOrEqual(5800)
      expect(retryAt).toBeLessThanOrEqual(6250)
      yield* Fiber.interrupt(fiber)
      yield* waitUntil(() => server.requests[1]!.aborted, "interrupting the delivery aborted the request")
      expect(records[1]).toMatchObject({ attempt: 2, outcome: "aborted" })
    }))

  it.live("never sends a request interrupted while it waited for a connection", () =>
    Effect.gen(function*() {
      const held: Array<() => void> = []
      const server = yield* startServer((_, res) => held.push(() => res.writeHead(200).end()))
      const transport = yield* Transport.make({ connections: 1 })
      const request = { ...Transport.requestTarget(server.url), headers: [], body }
      const first = yield* Effect.forkChild(transport.post(request))
      yield* waitUntil(() => server.requests.length === 1, "the first request holds the only connection")
      const second = yield* Effect.forkChild(transport.post(request))
      yield* realWait(20)
      yield* Fiber.interrupt(second)
      held[0]!()
      expect((yield* Fiber.join(first)).status).toBe(200)
      yield* realWait(50)
      expect(server.requests).toHaveLength(1)
      // The pool goes on: the next request is sent and answered.
      const third = yield* Effect.forkChild(transport.post(request))
      yield* waitUntil(() => held.length === 2, "the next request arrives")
      held[1]!()
      expect((yield* Fiber.join(third)).status).toBe(200)
    }))

  it.effect("times out a body that never ends at 5 s too: the deadline covers headers and body", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_, res) => {
        res.writeHead(200, { "content-length": "100" })
        res.write("partial")
      })
      const transport = yield* Transport.make()
      const fiber = yield* transport.post({ ...Transport.requestTarget(server.url), headers: [], body }).pipe(
        Effect.flip,
        Effect.forkChild
      )
      yield* waitUntil(() => server.requests.length === 1, "the receiver got the request")
      yield* realWait(20)
      yield* TestClock.adjust("5 seconds")
      const error = yield* Fiber.join(fiber)
      expect(error).toStrictEqual(
        new Transport.TransportTimeout({
          timeout: Transport.defaultTimeout,
          waitingFor: "body",
          message: "no complete response within 5s (waiting for the body)"
        })
      )
      yield* waitUntil(() => server.requests[0]!.aborted, "the server saw the request aborted")
    }))
})
