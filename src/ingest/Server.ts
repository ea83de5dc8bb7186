import { Duration, Effect, Fiber, Layer, type Option, type Redacted } from "effect"
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerError, HttpServerResponse } from "effect/http"
import { renderPrometheus } from "../metrics/Prometheus.js"
import { Relay } from "../relay/Relay.js"
import { adminApi } from "./AdminApi.js"
import { browserSettingsRoutes } from "./BrowserSettings.js"
import { consoleRoutes } from "./ConsoleRoutes.js"
import { errorResponse } from "./ErrorBody.js"
import { storeRetryAfterSeconds } from "./StoreUnavailable.js"
import { isTrackingRequest, trackingRoutes } from "./TrackingApi.js"
import { trackingCors } from "./TrackingCors.js"

export interface ServerOptions {
  /** `HOOKRELAY_ADMIN_TOKEN`; without it the admin API answers 404. */
  readonly adminToken: Option.Option<Redacted.Redacted>
  /** How long a request may take before it is answered `503 timeout` (default 60 s). */
  readonly requestDeadline?: Duration.Input | undefined
  /**
   * Telemetry on: each tracking request gets a server span (child of its `traceparent`), whose context its jobs carry
   * to their deliveries. Off (the default), tracking requests get no span at all.
   */
  readonly traceTracking?: boolean | undefined
}

export const requestDeadlineDefault = Duration.seconds(60)

/**
 * Readiness (REFERENCE §7): the handler is attached (before that and after it, `NodeServer` answers `/readyz` itself) and
 * the store answers. A store that cannot is a `503` naming why, for the load balancer to send traffic elsewhere.
 */
const readiness = Effect.flatMap(Relay, (relay) => relay.storeStatus).pipe(
  Effect.map((status) =>
    status.available
      ? HttpServerResponse.jsonUnsafe({ status: "ready" })
      : HttpServerResponse.jsonUnsafe({
        status: "unavailable",
        reason: status.kind === "full" ? "store_full" : "store_unavailable",
        message: `the store cannot ${status.kind === "full" ? "write" : "be reached"}: ${status.detail}`,
        operation: status.operation,
        since: new Date(status.since).toISOString()
      }, { status: 503, headers: { "retry-after": String(storeRetryAfterSeconds) } })
  )
)

const operationalRoutes = [
  HttpRouter.route("GET", "/healthz", HttpServerResponse.jsonUnsafe({ status: "ok" })),
  HttpRouter.route("GET", "/readyz", readiness),
  HttpRouter.route(
    "GET",
    "/metrics",
    Effect.map(
      renderPrometheus,
      (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
    )
  )
]

/**
 * Every hookrelay route: the tracking API, the admin API, the web console, health and metrics, as a layer of routes
 * for an `HttpRouter` (merge your own route layers beside it; `layer` serves it).
 */
export const router = (options: ServerOptions) =>
  Layer.merge(
    HttpRouter.addAll([
      ...trackingRoutes(options.traceTracking === true),
      ...browserSettingsRoutes,
      ...consoleRoutes(),
      ...operationalRoutes
    ]),
    adminApi(options.adminToken)
  )

/** A path no route serves is answered like every other hookrelay error: JSON, `404 not_found`. */
const notFoundAsJson = <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchIf(
    app,
    (error) => HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound",
    () => Effect.succeed(errorResponse(404, "not_found", "no such route"))
  )

/**
 * Every request is answered within `deadline`: past it, `503 timeout` with `Retry-After`. The handler goes on
 * detached (a commit under way is not cut half-way; its messages, retried, are deduplicated by message id), so the
 * answer does not wait for it; a request given up by its client interrupts it in the background.
 */
export const withDeadline = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  deadline: Duration.Input
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.flatMap(Effect.forkDetach(app), (fiber) =>
    Fiber.join(fiber).pipe(
      // The server starts each request uninterruptible; only waiting here is cut by the deadline.
      Effect.interruptible,
      Effect.timeoutOrElse({
        duration: deadline,
        orElse: () =>
          Effect.succeed(
            errorResponse(503, "timeout", "the request could not be answered in time; try again", [], {
              "retry-after": "1"
            })
          )
      }),
      Effect.onInterrupt(() => Effect.forkDetach(Fiber.interrupt(fiber)))
    ))

/**
 * The hookrelay HTTP app as a layer: mount it on any `HttpServer` (NodeHttpServer.layer in
 * main.ts, or the embedding service's own). Needs the `Relay` services (`RelayServices`).
 */
export const layer = (options: ServerOptions) => {
  const deadline = options.requestDeadline ?? requestDeadlineDefault
  // CORS and the deadline wrap the app itself: the server's middleware runs once the answer is already sent. CORS goes
  // outside the deadline, so that a preflight is answered without a fiber of its own and the deadline's 503 is readable.
  const serve = Layer.unwrap(
    Effect.map(HttpRouter.toHttpEffect(router(options)), (app) =>
      HttpServer.serve(
        trackingCors(withDeadline(notFoundAsJson(app), deadline)),
        // Every peer is trusted, as before: hookrelay is deployed behind its operator's own proxy.
        HttpMiddleware.xForwardedHeaders({ trustedProxies: () => true })
      ))
  )
  // Without telemetry the tracking API's requests get no server span: the span and its attributes (the URL parsed
  // again, every header copied for redaction) were a large share of what a request allocated, and the young-generation
  // pauses that garbage causes are the tail of the accept latency. Every other route keeps its span.
  return options.traceTracking === true
    ? serve
    : serve.pipe(Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(isTrackingRequest)))
}
