import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Exit, Fiber } from "effect"
import { HttpServerResponse } from "effect/http"
import { TestClock } from "effect/testing"
import type { AddressInfo } from "node:net"
import { connect } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"
import { Agent, Pool, request } from "undici"
import {
  keepAliveDefault,
  keepAliveTimeoutConfig,
  makeNodeServer,
  requestDeadlineConfig
} from "../../src/ingest/NodeServer.js"
import { requestDeadlineDefault, withDeadline } from "../../src/ingest/Server.js"

const read = (env: Record<string, string>) =>
  Effect.provideService(keepAliveTimeoutConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))

describe("the node HTTP server's keep-alive", () => {
  it.effect("defaults to 65 s and reads HOOKRELAY_KEEP_ALIVE_TIMEOUT as milliseconds or a duration", () =>
    Effect.gen(function*() {
      expect(Duration.toMillis(yield* read({}))).toBe(65_000)
      expect(Duration.toMillis(yield* read({ HOOKRELAY_KEEP_ALIVE_TIMEOUT: "90 seconds" }))).toBe(90_000)
      expect(Duration.toMillis(yield* read({ HOOKRELAY_KEEP_ALIVE_TIMEOUT: "30000" }))).toBe(30_000)
      for (const value of ["0", "soon", "-5"]) {
        const exit = yield* Effect.exit(read({ HOOKRELAY_KEEP_ALIVE_TIMEOUT: value }))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain("HOOKRELAY_KEEP_ALIVE_TIMEOUT")
      }
    }))

  it("keeps idle connections longer than a load balancer's 60 s, and the header deadline longer still", () => {
    const server = makeNodeServer(keepAliveDefault)()
    expect(server.keepAliveTimeout).toBe(65_000)
    expect(server.headersTimeout).toBe(66_000)
    // A short keep-alive leaves Node's own header deadline (60 s) alone.
    expect(makeNodeServer("2 seconds")().headersTimeout).toBe(60_000)
  })

  // Node's timer, not ours (no Clock to drive): a real loopback server with a short keep-alive shows it is applied.
  it("reuses an idle connection within the keep-alive and closes it after", async () => {
    const server = makeNodeServer("400 millis")()
    server.on("request", (_request, response) => response.end("ok"))
    let connections = 0
    server.on("connection", () => connections++)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    const socket = connect(port, "127.0.0.1")
    let received = ""
    socket.on("data", (chunk: Buffer) => received += chunk.toString("latin1"))
    const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(performance.now())))
    const answers = () => received.split("HTTP/1.1 200").length - 1
    const get = async (count: number) => {
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`)
      while (answers() < count) await sleep(5)
    }
    try {
      await get(1)
      await sleep(150)
      await get(2)
      const idleSince = performance.now()
      expect(connections).toBe(1)
      const closedAt = await closed
      // Closed by the server (the test's own timeout bounds the wait) once idle for its keep-alive, never before.
      expect(closedAt - idleSince).toBeGreaterThanOrEqual(350)
      expect(answers()).toBe(2)
    } finally {
      socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  // Graceful shutdown (SIGTERM): Node waits for busy connections, and kept one open after its answer for the whole
  // keep-alive; a container's grace period is shorter. The keep-alive here outlasts the test's timeout, so a close
  // that waited for it fails the test.
  it("closing lets a busy keep-alive connection go once its answer is sent", async () => {
    const server = makeNodeServer("10 minutes")()
    server.on("request", (_request, response) => setTimeout(() => response.end("done"), 200))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    const agent = new Agent({ keepAliveTimeout: 120_000 })
    try {
      const answer = request(`http://127.0.0.1:${port}/`, { dispatcher: agent }).then((response) =>
        response.body.text()
      )
      await sleep(50)
      const closing = new Promise<void>((resolve) => server.close(() => resolve()))
      expect(await answer).toBe("done")
      await closing
    } finally {
      await agent.close()
    }
  })

  // As Go's `Server.Shutdown` does: an answer in flight at close tells its client the connection ends with it, so the
  // client sends its next request on a new connection (to another instance) rather than on one about to close.
  it("closing answers the requests in flight with Connection: close and ends their connections after them", async () => {
    const server = makeNodeServer("10 minutes")()
    server.on("request", (_request, response) => setTimeout(() => response.end("ok"), 100))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1, keepAliveTimeout: 120_000 })
    try {
      const before = await pool.request({ path: "/", method: "GET" })
      expect(before.headers.connection).toBe("keep-alive")
      await before.body.text()
      const first = pool.request({ path: "/", method: "GET" })
      await sleep(30)
      const closing = new Promise<void>((resolve) => server.close(() => resolve()))
      const answer = await first
      expect(answer.headers.connection).toBe("close")
      expect(await answer.body.text()).toBe("ok")
      // Ends with the connection, not after the keep-alive (which outlasts the test's timeout).
      await closing
    } finally {
      await pool.close()
    }
  })
})

describe("a request that reaches the port", () => {
  const ask = async (port: number, path: string, method = "GET") => {
    const response = await request(`http://127.0.0.1:${port}${path}`, {
      method,
      ...(method === "POST" && { body: "{}" })
    })
    const text = await response.body.text()
    return { status: response.statusCode, retryAfter: response.headers["retry-after"], body: JSON.parse(text) }
  }

  // Listening starts before the application is attached, and it is detached before the server closes.
  it("is answered while no application is attached: alive, not ready, come back later", async () => {
    const server = makeNodeServer(keepAliveDefault)()
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const { port } = server.address() as AddressInfo
    try {
      expect(await ask(port, "/healthz")).toMatchObject({ status: 200, body: { status: "ok", phase: "starting" } })
      expect(await ask(port, "/readyz")).toMatchObject({ status: 503, retryAfter: "1", body: { status: "starting" } })
      expect(await ask(port, "/v1/batch", "POST")).toMatchObject({
        status: 503,
        retryAfter: "1",
        body: { success: false, code: "starting" }
      })
      const app = (_request: unknown, response: import("node:http").ServerResponse) => response.end("{\"app\":true}")
      server.on("request", app)
      expect(await ask(port, "/readyz")).toStrictEqual({ status: 200, retryAfter: undefined, body: { app: true } })
      server.off("request", app)
      expect(await ask(port, "/readyz")).toMatchObject({ status: 503, body: { status: "stopping" } })
      expect(await ask(port, "/v1/track", "POST")).toMatchObject({ status: 503, body: { code: "stopping" } })
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it.effect("has a deadline of 60 s, or HOOKRELAY_REQUEST_DEADLINE", () =>
    Effect.gen(function*() {
      const deadline = (env: Record<string, string>) =>
        Effect.provideService(requestDeadlineConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))
      expect(Duration.toMillis(yield* deadline({}))).toBe(Duration.toMillis(requestDeadlineDefault))
      expect(Duration.toMillis(yield* deadline({ HOOKRELAY_REQUEST_DEADLINE: "30 seconds" }))).toBe(30_000)
      expect(Exit.isFailure(yield* Effect.exit(deadline({ HOOKRELAY_REQUEST_DEADLINE: "soon" })))).toBe(true)
    }))

  it.effect("gets 503 timeout once its deadline passes, even while its handler cannot be interrupted", () =>
    Effect.gen(function*() {
      const handler = Effect.uninterruptible(Effect.as(Effect.never, HttpServerResponse.empty()))
      const fiber = yield* Effect.forkChild(withDeadline(handler, requestDeadlineDefault))
      yield* TestClock.adjust(Duration.subtract(requestDeadlineDefault, Duration.millis(1)))
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(Duration.millis(1))
      const response = yield* Fiber.join(fiber)
      expect(response.status).toBe(503)
      expect(response.headers["retry-after"]).toBe("1")
    }))

  it.effect("is answered by its handler within the deadline", () =>
    Effect.gen(function*() {
      const handler = Effect.as(Effect.sleep("59 seconds"), HttpServerResponse.empty({ status: 204 }))
      const fiber = yield* Effect.forkChild(withDeadline(handler, requestDeadlineDefault))
      yield* TestClock.adjust("59 seconds")
      expect((yield* Fiber.join(fiber)).status).toBe(204)
    }))
})
