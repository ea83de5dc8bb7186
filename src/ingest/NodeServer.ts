import { Config, ConfigError, Duration, Either } from "effect"
import { type IncomingMessage, Server, type ServerResponse } from "node:http"
import { parseWait } from "../overload/OverloadConfig.js"

/**
 * How long the server keeps an idle keep-alive connection open. Node's default, 5 s, is shorter than the idle timeout of
 * the load balancers and proxies that usually stand in front of a server (AWS ALB 60 s, nginx's upstream keepalive
 * 60 s): such a proxy then sends a request on a connection the server is closing at that very moment, and its client
 * gets a 502. Longer than theirs, the proxy closes first. Segment's libraries keep their connections alive too.
 */
export const keepAliveDefault = Duration.seconds(65)

/** `HOOKRELAY_KEEP_ALIVE_TIMEOUT`: milliseconds or a duration such as `90 seconds`; default 65 s. */
export const keepAliveTimeoutConfig: Config.Config<Duration.Duration> = Config.string("HOOKRELAY_KEEP_ALIVE_TIMEOUT")
  .pipe(
    Config.mapOrFail((input) => Either.mapLeft(parseWait(input), (message) => ConfigError.InvalidData([], message))),
    Config.withDefault(keepAliveDefault)
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

  constructor() {
    super()
    this.on("request", (_request: IncomingMessage, response: ServerResponse) => {
      if (this.closing) return this.lastOnItsConnection(response)
      this.answering.add(response)
      response.once("close", () => this.answering.delete(response))
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
 * A `node:http` server whose idle connections stay open for `keepAliveTimeout`, for `NodeHttpServer.layer`. Its header
 * deadline (Node's 60 s) is kept longer than the keep-alive, as Node's documentation advises for servers behind a proxy.
 */
export const makeNodeServer = (keepAliveTimeout: Duration.DurationInput) => (): Server => {
  const server = new ClosingServer()
  const millis = Duration.toMillis(Duration.decode(keepAliveTimeout))
  server.keepAliveTimeout = millis
  server.headersTimeout = Math.max(server.headersTimeout, millis + 1000)
  return server
}
