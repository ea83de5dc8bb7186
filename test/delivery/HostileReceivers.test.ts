import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import type { Scope } from "effect"
import { TestClock } from "effect/testing"
import * as net from "node:net"
import type { AddressInfo } from "node:net"
import { attempt, prepareEndpoint } from "../../src/delivery/Attempt.js"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import * as Transport from "../../src/delivery/Transport.js"
import { type App, startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { encode, realWait, recorder, startServer, waitUntil } from "./support.js"

/**
 * Receivers that misbehave (REFERENCE §4, §8): each one ends as one classified attempt within the 5 s deadline, the
 * body read stops at 64 KB, no redirect is followed, and the engine keeps delivering to healthy endpoints meanwhile.
 * Complements Transport.test.ts (a 10 MB body, a body that stalls, a receiver that never answers, a relative 302).
 */

const body = encode(`{"version":1,"type":"track","messageId":"m-1","event":"E","context":{}}`)

/** A raw TCP receiver: `onRequest` gets the socket once the request head and body have arrived. */
interface RawReceiver {
  readonly url: string
  requests: number
  /** Sockets the receiver saw closed by the client before it was done with them. */
  clientClosed: number
}

const startRawReceiver = (
  onRequest: (socket: net.Socket, receiver: RawReceiver) => void
): Effect.Effect<RawReceiver, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ server: net.Server; sockets: Set<net.Socket>; receiver: RawReceiver }>((resume) => {
      const receiver: RawReceiver = { url: "", requests: 0, clientClosed: 0 }
      const sockets = new Set<net.Socket>()
      const server = net.createServer((socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => {})
        let seen = ""
        socket.on("data", (chunk: Buffer) => {
          seen += chunk.toString("latin1")
          const head = seen.indexOf("\r\n\r\n")
          if (head === -1) return
          const length = Number(/content-length: *(\d+)/i.exec(seen.slice(0, head))?.[1] ?? 0)
          if (seen.length - head - 4 < length) return
          seen = ""
          receiver.requests++
          onRequest(socket, receiver)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        Object.assign(receiver, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
        resume(Effect.succeed({ server, sockets, receiver }))
      })
    }),
    ({ server, sockets }) =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ receiver }) => receiver))

/** Answers with a status line and headers, then whatever `rest` writes. */
const rawAnswer = (socket: net.Socket, head: string) => socket.write(`${head}\r\n\r\n`)

/** One classified attempt against `url` with the live transport (the attempt record and the outcome). */
const classify = (url: string) =>
  Effect.gen(function*() {
    const { records, sink } = recorder()
    const outcome = yield* attempt({
      jobId: "job-1",
      messageId: "m-1",
      endpoint: prepareEndpoint({ url }, body, undefined),
      attemptNumber: 1,
      record: sink
    })
    return { outcome, record: records[0]! }
  })

describe("hostile receivers, one attempt each (real loopback servers)", () => {
  it.live("an endless body: 64 KB read, the connection dropped, the status classified", () =>
    Effect.gen(function*() {
      let written = 0
      const closed: Array<boolean> = []
      const server = yield* startServer((_, res, index) => {
        closed[index] = false
        res.writeHead(503, { "retry-after": "7" }) // chunked, no length: it never ends
        const chunk = Buffer.alloc(16 * 1024, "x")
        const pump = () => {
          if (res.destroyed) return void (closed[index] = true)
          res.write(chunk)
          written += chunk.length
          setTimeout(pump, 1)
        }
        pump()
      })
      const { outcome, record } = yield* classify(server.url).pipe(Effect.provide(Transport.layer()))
      expect(outcome).toMatchObject({ _tag: "Retryable", reason: "HTTP 503", status: 503 })
      expect(outcome._tag === "Retryable" && outcome.retryAfter).toStrictEqual(Duration.seconds(7))
      expect(record).toMatchObject({ outcome: "retryable", statusCode: 503, responseSnippet: "x".repeat(1024) })
      yield* waitUntil(() => closed[0] === true, "the receiver saw the connection dropped")
      expect(written).toBeLessThan(1024 * 1024)
    }))

  it.live("a connection reset mid-body: retryable, with the reset named", () =>
    Effect.gen(function*() {
      const receiver = yield* startRawReceiver((socket) => {
        rawAnswer(socket, "HTTP/1.1 200 OK\r\ncontent-length: 100000")
        socket.write("partial body ")
        setTimeout(() => socket.resetAndDestroy(), 20)
      })
      const { outcome, record } = yield* classify(receiver.url).pipe(Effect.provide(Transport.layer()))
      expect(outcome._tag).toBe("Retryable")
      expect(record.outcome).toBe("retryable")
      expect(record.error).toMatch(
        /^(connection reset \(ECONNRESET\)|connection closed by the receiver \(UND_ERR_SOCKET\)): /
      )
    }))

  it.live("a connection closed before any answer: retryable", () =>
    Effect.gen(function*() {
      const receiver = yield* startRawReceiver((socket) => socket.destroy())
      const { outcome, record } = yield* classify(receiver.url).pipe(Effect.provide(Transport.layer()))
      expect(outcome._tag).toBe("Retryable")
      expect(record.error).toMatch(/^connection closed by the receiver \(UND_ERR_SOCKET\): /)
    }))

  it.live("garbage instead of HTTP: retryable as an invalid HTTP response", () =>
    Effect.gen(function*() {
      const receiver = yield* startRawReceiver((socket) => {
        socket.write("SSH-2.0-OpenSSH_9.6\r\n\u0000\u0001\u0002 not http at all\r\n\r\n")
      })
      const { outcome, record } = yield* classify(receiver.url).pipe(Effect.provide(Transport.layer()))
      expect(outcome).toMatchObject({ _tag: "Retryable", code: "HPE_INVALID_RESPONSE" })
      expect(record.error).toMatch(/^invalid HTTP response \(HPE_[A-Z_]+\): /)
      expect(record.statusCode).toBeNull()
    }))

  it.live("huge response headers (1 MB): retryable, nothing buffered past undici's header limit", () =>
    Effect.gen(function*() {
      const receiver = yield* startRawReceiver((socket) => {
        socket.write("HTTP/1.1 200 OK\r\n")
        const line = `x-padding: ${"a".repeat(8 * 1024)}\r\n`
        for (let i = 0; i < 128 && !socket.destroyed; i++) socket.write(line)
      })
      const { outcome, record } = yield* classify(receiver.url).pipe(Effect.provide(Transport.layer()))
      expect(outcome._tag).toBe("Retryable")
      expect(outcome).toMatchObject({ code: "UND_ERR_HEADERS_OVERFLOW" })
      expect(record.error).toBe(
        "invalid HTTP response (headers too large) (UND_ERR_HEADERS_OVERFLOW): Headers Overflow Error"
      )
    }))

  it.live("redirects are never followed: 301, 302, 303, 307, 308 to another server, which gets nothing", () =>
    Effect.gen(function*() {
      const target = yield* startServer((_, res) => res.writeHead(200).end("stolen"))
      const statuses = [301, 302, 303, 307, 308]
      const redirector = yield* startServer((request, res) =>
        res.writeHead(Number(request.url.slice(1)), { location: `${target.url}/elsewhere` }).end()
      )
      for (const status of statuses) {
        const { outcome, record } = yield* classify(`${redirector.url}/${status}`).pipe(
          Effect.provide(Transport.layer())
        )
        expect(outcome).toStrictEqual(AttemptOutcome.Permanent({
          reason: `HTTP ${status} redirect to ${target.url}/elsewhere (redirects are not followed)`,
          status
        }))
        expect(record).toMatchObject({ outcome: "permanent", statusCode: status })
      }
      expect(redirector.requests).toHaveLength(statuses.length)
      expect(target.handlerCalls).toBe(0)
    }))
})

describe("hostile receivers against the 5 s deadline (TestClock)", () => {
  it.effect("a body trickled a byte at a time is cut at 5 s, though bytes keep coming", () =>
    Effect.gen(function*() {
      let sent = 0
      let aborted = false
      const server = yield* startServer((_, res) => {
        res.writeHead(200, { "content-length": "1000000" })
        const drip = () => {
          if (res.destroyed) return void (aborted = true)
          res.write("z")
          sent++
          setTimeout(drip, 5)
        }
        drip()
      })
      const { records, sink } = recorder()
      const fiber = yield* attempt({
        jobId: "job-1",
        messageId: "m-1",
        endpoint: prepareEndpoint({ url: server.url }, body, undefined),
        attemptNumber: 1,
        record: sink
      }).pipe(Effect.provide(Transport.layer()), Effect.forkChild)
      yield* waitUntil(() => sent >= 10, "the receiver is trickling")
      // Bytes keep arriving: no idle timer would fire, only the deadline on the whole answer.
      yield* TestClock.adjust("4999 millis")
      yield* realWait(30)
      expect(records).toStrictEqual([])
      yield* TestClock.adjust("1 millis")
      const outcome = yield* Fiber.join(fiber)
      expect(outcome).toStrictEqual(AttemptOutcome.Retryable({
        reason: "timeout: no complete response within 5s (waiting for the body)",
        code: "TIMEOUT"
      }))
      expect(records[0]).toMatchObject({ outcome: "retryable", durationMs: 5000 })
      yield* waitUntil(() => aborted, "the receiver saw the request aborted")
    }))
})

/** The first attempt of the only job of `messageId`, once recorded. */
const firstAttempt = (app: App, messageId: string) =>
  Effect.map(
    pollUntil(
      app.relayMessages.messageJobs(messageId),
      (jobs) => (jobs[0]?.attempts.length ?? 0) >= 1,
      `the first attempt of ${messageId} is recorded`
    ),
    (jobs) => jobs[0]!.attempts[0]!
  )

describe("hostile receivers through the engine", () => {
  it.live("each hostile endpoint ends as its classified attempt; a healthy source is delivered meanwhile", () =>
    Effect.gen(function*() {
      // Slow: headers, then a byte every 100 ms for 60 s. Endless: 200 and a body without end, as fast as it goes.
      let slowOpen = false
      const slow = yield* startServer((_, res) => {
        res.writeHead(200, { "content-length": "600" })
        slowOpen = true
        const drip = () => {
          if (res.destroyed) return void (slowOpen = false)
          res.write("s")
          setTimeout(drip, 100)
        }
        drip()
      })
      const endless = yield* startServer((_, res) => {
        res.writeHead(200)
        const chunk = Buffer.alloc(16 * 1024, "e")
        const pump = () => {
          if (!res.destroyed) res.write(chunk, () => setImmediate(pump))
        }
        pump()
      })
      const big = yield* startServer((_, res) => {
        res.writeHead(200, { "content-length": String(10 * 1024 * 1024) })
        res.end(Buffer.alloc(10 * 1024 * 1024, "b"))
      })
      const reset = yield* startRawReceiver((socket) => {
        rawAnswer(socket, "HTTP/1.1 200 OK\r\ncontent-length: 5000")
        socket.write("half")
        setTimeout(() => socket.resetAndDestroy(), 10)
      })
      const garbage = yield* startRawReceiver((socket) => socket.write("\u0016\u0003\u0001 garbage, not HTTP\r\n\r\n"))
      const hugeHeaders = yield* startRawReceiver((socket) => {
        socket.write("HTTP/1.1 200 OK\r\n")
        for (let i = 0; i < 128 && !socket.destroyed; i++) socket.write(`x-h${i}: ${"h".repeat(8 * 1024)}\r\n`)
      })
      const target = yield* startServer((_, res) => res.writeHead(200).end())
      const redirect = yield* startServer((_, res) => res.writeHead(302, { location: `${target.url}/stolen` }).end())
      const healthy = yield* startServer((_, res) => res.writeHead(200).end("ok"))

      const app = yield* startApp()
      const hostile = {
        slow: slow.url,
        endless: endless.url,
        big: big.url,
        reset: reset.url,
        garbage: garbage.url,
        huge: hugeHeaders.url,
        redirect: redirect.url
      }
      for (const [id, url] of [...Object.entries(hostile), ["healthy", healthy.url] as const]) {
        const put = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, {
          body: { writeKey: `wk_${id}`, webhooks: { enabled: true, endpoints: [{ url }] } }
        })
        expect(put.status).toBe(200)
      }
      for (const id of Object.keys(hostile)) {
        expect(yield* track(app.baseUrl, `wk_${id}`, { userId: "u", event: "E", messageId: `m-${id}` })).toBe(200)
      }
      yield* waitUntil(() => slowOpen, "the slow receiver is trickling")

      // While the slow receiver holds its attempt open, a healthy source's messages are delivered.
      for (let i = 0; i < 20; i++) {
        expect(yield* track(app.baseUrl, "wk_healthy", { userId: "u", event: "E", messageId: `ok-${i}` })).toBe(200)
      }
      for (let i = 0; i < 20; i++) {
        yield* pollUntil(
          app.relayMessages.messageJobs(`ok-${i}`),
          (jobs) => jobs[0]?.status === "delivered",
          `ok-${i} is delivered`
        )
      }
      // All delivered while the slow attempt was still open: the store has no attempt of it yet.
      const [slowJob] = yield* app.relayMessages.messageJobs("m-slow")
      expect(slowJob!.attempts).toStrictEqual([])
      expect(slowOpen).toBe(true)

      const endlessAttempt = yield* firstAttempt(app, "m-endless")
      expect(endlessAttempt).toMatchObject({ outcome: "success", statusCode: 200 })
      expect(endlessAttempt.responseSnippet).toBe("e".repeat(1024))
      const bigAttempt = yield* firstAttempt(app, "m-big")
      expect(bigAttempt).toMatchObject({ outcome: "success", statusCode: 200, responseSnippet: "b".repeat(1024) })
      const resetAttempt = yield* firstAttempt(app, "m-reset")
      expect(resetAttempt.outcome).toBe("retryable")
      expect(resetAttempt.error).toMatch(/connection reset|connection closed by the receiver/)
      const garbageAttempt = yield* firstAttempt(app, "m-garbage")
      expect(garbageAttempt.outcome).toBe("retryable")
      expect(garbageAttempt.error).toMatch(/^invalid HTTP response \(HPE_/)
      const hugeAttempt = yield* firstAttempt(app, "m-huge")
      expect(hugeAttempt.outcome).toBe("retryable")
      expect(hugeAttempt.error).toMatch(/^invalid HTTP response \(headers too large\) \(UND_ERR_HEADERS_OVERFLOW\)/)
      const redirectAttempt = yield* firstAttempt(app, "m-redirect")
      expect(redirectAttempt).toMatchObject({ outcome: "permanent", statusCode: 302 })
      expect(target.handlerCalls).toBe(0)
      const [redirectJob] = yield* app.relayMessages.messageJobs("m-redirect")
      expect(redirectJob!.status).toBe("dead")

      // The slow one: cut at the 5 s deadline (real time here; TestClock pins it exactly in the test above).
      const slowAttempt = yield* Effect.map(
        pollUntil(
          app.relayMessages.messageJobs("m-slow"),
          (jobs) => (jobs[0]?.attempts.length ?? 0) >= 1,
          "the slow attempt is recorded"
        ),
        (jobs) => jobs[0]!.attempts[0]!
      )
      expect(slowAttempt).toMatchObject({
        outcome: "retryable",
        error: "timeout: no complete response within 5s (waiting for the body)"
      })
      // Not cut before the deadline; how exactly it is cut is pinned on TestClock in the test above.
      expect(slowAttempt.durationMs).toBeGreaterThanOrEqual(5_000)
    }))
})
