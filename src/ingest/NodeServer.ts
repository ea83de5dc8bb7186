import { type Config, Duration } from "effect"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import { positiveDurationConfig } from "../domain/DurationConfig.js"

/**
 * How long the server keeps an idle keep-alive connection open. Node's default, 5 s, is shorter than the idle timeout of
 * the load balancers and proxies that usually stand in front of a server (AWS ALB 60 s, nginx's upstream keepalive
 * 60 s): such a proxy then sends a request on a connection the server is closing at that very moment, and its client
 * gets a 502. Longer than theirs, the proxy closes first. Segment's libraries keep their connections alive too.
 */
export const keepAliveDefault = Duration.seconds(65)

/** `HOOKRELAY_KEEP_ALIVE_TIMEOUT`: milliseconds or a duration such as `90 seconds`; default 65 s. */
export const keepAliveTimeoutConfig: Config.Config<Duration.Duration> = positiveDurationConfig(
  "HOOKRELAY_KEEP_ALIVE_TIMEOUT",
  keepAliveDefault
)

/** `HOOKRELAY_REQUEST_DEADLINE`: how long a request may take before it is answered 503; default 60 s. */
export const requestDeadlineConfig: Config.Config<Duration.Duration> = positiveDurationConfig(
  "HOOKRELAY_REQUEST_DEADLINE",
  Duration.seconds(60)
)

/**
 * `node:http`'s server whose `close` also ends each keep-alive connection as soon as its last answer is sent. Node closes
 * the connections idle at that moment and waits for the others; one busy then stayed open after its answer until its
 * keep-alive ran out, which with 65 s would hold a graceful shutdown past a container's grace period (Kubernetes: 30 s),
 * and a client sending request after request on it kept it open for as long as it went on. Once closing, every answer
 * not yet started says `Connection: close` (Node then closes its connection after it), and an answer already under way
 * closes the connections idle once it is done. No timer: each connection ends with its own last answer.
 */
class ClosingServer extends Server {
  private closing = false
  /** Answers not yet done: the ones a `close` must reach. */
  private readonly answering = new Set<ServerResponse>()

  /** Whether the application's handler has been attached once: a request without one is then a late one. */
  private served = false

  constructor() {
    // Node checks the header and request deadlines on this interval (30 s by default): a slow-header client is cut
    // within 5 s of the deadline instead of up to 30 s past it.
    super({ connectionsCheckingInterval: 5_000 })
    this.on("request", (request: IncomingMessage, response: ServerResponse) => {
      // Listening starts before the application is attached (`NodeHttpServer.layer`), and the application is detached
      // before the server closes: a request that comes in between has no one else to answer it.
      const attached = this.listenerCount("request") > 1
      if (attached) this.served = true
      if (this.closing) this.lastOnItsConnection(response)
      else {
        this.answering.add(response)
        response.once("close", () => this.answering.delete(response))
      }
      if (!attached) answerUnattached(request, response, this.served ? "stopping" : "starting")
    })
  }

  private lastOnItsConnection(response: ServerResponse): void {
    if (!response.headersSent) response.setHeader("connection", "close")
    else response.once("finish", () => this.closeIdleConnections())
  }

  override close(callback?: (error?: Error) => void): this {
    if (this.listening && !this.closing) {
      this.closing = true
      for (const response of this.answering) this.lastOnItsConnection(response)
      this.answering.clear()
    }
    return super.close(callback)
  }
}

/**
 * The answer to a request that reaches the port while no application is attached (starting, or stopping): the process
 * is alive (`/healthz` 200), not ready (`/readyz` 503), and anything else is asked to come back (`503` with
 * `Retry-After`). The body is drained so that the connection can carry the client's retry.
 */
const answerUnattached = (request: IncomingMessage, response: ServerResponse, phase: "starting" | "stopping") => {
  request.resume()
  const path = (request.url ?? "").split("?")[0]
  const live = path === "/healthz" && (request.method === "GET" || request.method === "HEAD")
  const body = path === "/readyz"
    ? { status: phase, reason: phase, message: `hookrelay is ${phase}` }
    : live
    ? { status: "ok", phase }
    : { success: false, code: phase, message: `hookrelay is ${phase}; try again shortly`, errors: [] }
  const text = JSON.stringify(body)
  if (!response.headersSent) {
    response.writeHead(live ? 200 : 503, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      ...(live ? {} : { "retry-after": "1" })
    })
  }
  response.end(request.method === "HEAD" ? undefined : text)
}

/**
 * A `node:http` server whose idle connections stay open for `keepAliveTimeout`, for `NodeHttpServer.layer`. Its header
 * deadline (Node's 60 s) is kept longer than the keep-alive, as Node's documentation advises for servers behind a proxy.
 */
export const makeNodeServer = (keepAliveTimeout: Duration.Input) => (): Server => {
  const server = new ClosingServer()
  const millis = Duration.toMillis(keepAliveTimeout)
  server.keepAliveTimeout = millis
  server.headersTimeout = Math.max(server.headersTimeout, millis + 1000)
  return server
}
