import { HttpMiddleware, HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { Effect, type Option, type Redacted } from "effect"
import { renderPrometheus } from "../metrics/Prometheus.js"
import { adminRoutes } from "./AdminApi.js"
import { audienceRoutes } from "./AudienceRoutes.js"
import { browserSettingsRoutes } from "./BrowserSettings.js"
import { consoleRoutes } from "./ConsoleRoutes.js"
import { errorResponse } from "./ErrorBody.js"
import { isTrackingRequest, trackingRoutes } from "./TrackingApi.js"
import { trackingCors } from "./TrackingCors.js"

export interface ServerOptions {
  /** `HOOKRELAY_ADMIN_TOKEN`; without it the admin API answers 404. */
  readonly adminToken: Option.Option<Redacted.Redacted>
}

const operationalRoutes = HttpRouter.empty.pipe(
  HttpRouter.get("/healthz", Effect.succeed(HttpServerResponse.unsafeJson({ status: "ok" }))),
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
    trackingRoutes,
    browserSettingsRoutes,
    adminRoutes(options.adminToken),
    audienceRoutes(options.adminToken),
    consoleRoutes(),
    operationalRoutes
  ).pipe(
    Effect.catchTag("RouteNotFound", () => Effect.succeed(errorResponse(404, "not_found", "no such route")))
  )

/**
 * The hookrelay HTTP app as a layer: mount it on any `HttpServer` (NodeHttpServer.layer in
 * main.ts, or the embedding service's own). Needs `Relay`.
 */
export const layer = (options: ServerOptions) =>
  HttpServer.serve(trackingCors(router(options)), HttpMiddleware.xForwardedHeaders).pipe(
    // The tracking API's requests get no server span: the span and its attributes (the URL parsed again, every header
    // copied for redaction) were a large share of what a request allocated, and the young-generation pauses that
    // garbage causes are the tail of the accept latency (measured at 1 000 messages/s: longest pause 11.6–12.8 →
    // 7.4–7.7 ms). Every other route keeps its span.
    HttpMiddleware.withTracerDisabledWhen(isTrackingRequest)
  )
