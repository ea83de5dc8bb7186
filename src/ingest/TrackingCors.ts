import { Effect } from "effect"
import { HttpMiddleware, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { isTrackingRequest } from "./TrackingApi.js"

/**
 * Cross-origin access to the tracking API, for web sources: analytics.js runs on the customer's pages and posts to
 * hookrelay's host, `text/plain` with the write key as Basic auth. The `Authorization` header makes the browser ask
 * first (`OPTIONS`, answered here); without `Access-Control-Allow-Origin` on the answers it hides them, and analytics.js
 * takes every message as failed and sends it again, up to ten times. It loads its settings from here too
 * (`BrowserSettings.ts`).
 *
 * Any origin may send: a write key is public in every web page that embeds it, and it is all that authenticates the
 * tracking API (no cookie, so `*` and no credentials). The admin API, the console and the metrics stay same-origin.
 */
const cors = HttpMiddleware.cors({
  // No origins listed: `Access-Control-Allow-Origin: *`. No headers listed: a preflight allows whatever headers the
  // client asks for; the handler reads the ones it knows (Authorization, Content-Encoding) and ignores the rest.
  allowedMethods: ["GET", "POST", "OPTIONS"],
  // When a refused client may come back (ingest's 503s).
  exposedHeaders: ["retry-after"],
  maxAge: 86_400
})

/**
 * The app with CORS on the tracking API's paths (`/v1/…`): preflights answered, every answer readable cross-origin.
 * Wrap the app with it (or install it with `HttpRouter.middleware(trackingCors, { global: true })`).
 */
export const trackingCors = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> => {
  const withCors = cors(app)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => isTrackingRequest(request) ? withCors : app)
}
