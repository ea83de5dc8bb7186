import { Effect, Logger, References } from "effect"
import type { Duration, Scope } from "effect"
import { TestClock } from "effect/testing"
import { readFileSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { AttemptSink } from "../../src/delivery/Attempt.js"
import type { AttemptRecord } from "../../src/domain/AttemptRecord.js"

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

export const tlsFixture = {
  key: readFileSync(path.join(repoRoot, "test/fixtures/tls/key.pem")),
  cert: readFileSync(path.join(repoRoot, "test/fixtures/tls/cert.pem"))
}

/** One request as a test server saw it. `aborted`: the client closed it before our answer was finished. */
export interface ReceivedRequest {
  readonly method: string
  readonly url: string
  readonly rawHeaders: ReadonlyArray<string>
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
  aborted: boolean
}

export interface TestServer {
  readonly url: string
  readonly port: number
  readonly requests: Array<ReceivedRequest>
  /** Times the request handler was entered (before the body is read). */
  handlerCalls: number
}

export type Handler = (request: ReceivedRequest, response: http.ServerResponse, index: number) => void

/**
 * A real HTTP(S) server on 127.0.0.1, port 0, for the life of the scope. The handler runs once the request body is
 * complete; a handler that does nothing holds the request open.
 */
export const startServer = (
  handler: Handler,
  options: { readonly tls?: { readonly key: Buffer; readonly cert: Buffer } } = {}
): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ server: http.Server; state: TestServer }>((resume) => {
      const state: TestServer = { url: "", port: 0, requests: [], handlerCalls: 0 }
      const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
        state.handlerCalls += 1
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const received: ReceivedRequest = {
            method: req.method ?? "",
            url: req.url ?? "",
            rawHeaders: req.rawHeaders,
            headers: req.headers,
            body: Buffer.concat(chunks),
            aborted: false
          }
          res.on("close", () => {
            if (!res.writableFinished) received.aborted = true
          })
          const index = state.requests.push(received) - 1
          handler(received, res, index)
        })
      }
      const server = options.tls === undefined
        ? http.createServer(onRequest)
        : https.createServer({ key: options.tls.key, cert: options.tls.cert }, onRequest)
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        Object.assign(state, { port, url: `${options.tls === undefined ? "http" : "https"}://127.0.0.1:${port}` })
        resume(Effect.succeed({ server, state }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ state }) => state))

/** A port on 127.0.0.1 with nobody listening: bound, then closed. */
export const closedPort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Real time passes (tests mix TestClock with real sockets; real I/O needs real time). Test code only. */
export const realWait = (millis: number): Effect.Effect<void> =>
  Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, millis)))

/** Polls a condition on real time, every 2 ms, for up to `timeoutMillis`; fails the test with `what` otherwise. */
export const waitUntil = (condition: () => boolean, what: string, timeoutMillis = 5_000): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let waited = 0; !condition(); waited += 2) {
      if (waited > timeoutMillis) return yield* Effect.die(new Error(`timed out waiting until ${what}`))
      yield* realWait(2)
    }
  })

/**
 * Moves TestClock forward in `step`s until `condition` holds, letting real I/O run between steps. For flows whose
 * timing is jittered and driven by real sockets, where exact instants are not what the test asserts.
 */
export const adjustUntil = (
  condition: () => boolean,
  what: string,
  step: Duration.Input = "100 millis",
  maxSteps = 200
): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (let steps = 0; !condition(); steps++) {
      if (steps >= maxSteps) return yield* Effect.die(new Error(`clock advanced ${maxSteps} steps, still not ${what}`))
      yield* TestClock.adjust(step)
      yield* realWait(2)
    }
  })

/** An attempt sink that keeps the records for assertions. */
export const recorder = (): { readonly records: Array<AttemptRecord>; readonly sink: AttemptSink } => {
  const records: Array<AttemptRecord> = []
  return { records, sink: (record) => Effect.sync(() => void records.push(record)) }
}

export interface LogLine {
  readonly level: string
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** Captures log lines (`it.effect` hides the default logger; this one is added beside it). */
export const captureLogs = () => {
  const lines: Array<LogLine> = []
  const logger = Logger.make(({ fiber, logLevel, message }) => {
    lines.push({
      level: logLevel.toUpperCase(),
      message: Array.isArray(message) ? message.map(String).join(" ") : String(message),
      annotations: { ...fiber.getRef(References.CurrentLogAnnotations) }
    })
  })
  return { lines, layer: Logger.layer([logger], { mergeWithExisting: true }) }
}

export const encode = (text: string): Uint8Array => new TextEncoder().encode(text)
