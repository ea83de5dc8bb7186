import { HttpMiddleware, HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { Duration, Effect, type Option, type Redacted } from "effect"
import { renderPrometheus } from "../metrics/Prometheus.js"
import { Relay } from "../relay/Relay.js"
import { adminRoutes } from "./AdminApi.js"
import { audienceRoutes } from "./AudienceRoutes.js"
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
  readonly requestDeadline?: Duration.DurationInput | undefined
  /**
   * Telemetry on: each tracking request gets a server span (child of its `traceparent`), whose context its jobs carry
   * to their deliveries. Off (the default), tracking requests get no span at all.
   */
  readonly traceTracking?: boolean | undefined
}

export const requestDeadlineDefault = Duration.seconds(60)

/**
 * Readiness (SPEC §7): the handler is attached (before that and after it, `NodeServer` answers `/readyz` itself) and
 * the store answers. A store that cannot is a `503` naming why, for the load balancer to send traffic elsewhere.
 */
const readiness = Effect.flatMap(Relay, (relay) => relay.storeStatus).pipe(
  Effect.map((status) =>
    status.available
      ? HttpServerResponse.unsafeJson({ status: "ready" })
      : HttpServerResponse.unsafeJson({
        status: "unavailable",
        reason: status.kind === "full" ? "store_full" : "store_unavailable",
        message: `the store cannot ${status.kind === "full" ? "write" : "be reached"}: ${status.detail}`,
        operation: status.operation,
        since: new Date(status.since).toISOString()
      }, { status: 503, headers: { "retry-after": String(storeRetryAfterSeconds) } })
  )
)

const operationalRoutes = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
  HttpRouter.get("/readyz", readiness),
  HttpRouter.get(
    "/metrics",
    Effect.map(
      renderPrometheus,
      (text) => HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
    )
  )
)

/** Every hookrelay route: the tracking API, the admin API, the web console, health and metrics. */
export const router = (options: ServerOptions) =>
  HttpRouter.concatAll(
    trackingRoutes(options.traceTracking === true),
    browserSettingsRoutes,
    adminRoutes(options.adminToken),
    audienceRoutes(options.adminToken),
    consoleRoutes(),
    operationalRoutes
  ).pipe(
    Effect.catchTag("RouteNotFound", () => Effect.succeed(errorResponse(404, "not_found", "no such route")))
  )

/**
 * Every request is answered within `deadline`: past it, `503 timeout` with `Retry-After`. The handler goes on
 * detached (a commit under way is not cut half-way; its messages, retried, are deduplicated by message id), so the
 * answer does not wait for it.
 */
export const withDeadline = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  deadline: Duration.DurationInput
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.timeoutTo(Effect.disconnect(app), {
    duration: deadline,
    onSuccess: (response) => response,
    onTimeout: () =>
      errorResponse(503, "timeout", "the request could not be answered in time; try again", [], {
        "retry-after": "1"
      })
  })

/**
 * The hookrelay HTTP app as a layer: mount it on any `HttpServer` (NodeHttpServer.layer in
 * main.ts, or the embedding service's own). Needs `Relay`.
 */
export const layer = (options: ServerOptions) => {
  const serve = HttpServer.serve(
    withDeadline(trackingCors(router(options)), options.requestDeadline ?? requestDeadlineDefault),
    HttpMiddleware.xForwardedHeaders
  )
  // Without telemetry the tracking API's requests get no server span: the span and its attributes (the URL parsed
  // again, every header copied for redaction) were a large share of what a request allocated, and the young-generation
  // pauses that garbage causes are the tail of the accept latency (measured at 1 000 messages/s: longest pause
  // 11.6–12.8 → 7.4–7.7 ms). Every other route keeps its span.
  return options.traceTracking === true ? serve : serve.pipe(HttpMiddleware.withTracerDisabledWhen(isTrackingRequest))
}
