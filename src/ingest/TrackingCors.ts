import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
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
const allowOrigin = { "access-control-allow-origin": "*" } as const

/** When a refused client may come back (ingest's 503s). */
const exposedHeaders = "retry-after"

const preflightMaxAgeSeconds = 86_400

const preflight = (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse => {
  // Whatever headers the client asks for: the handler reads the ones it knows (Authorization, Content-Encoding) and
  // ignores the rest, as it does for same-origin requests.
  const requested = request.headers["access-control-request-headers"]
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      ...allowOrigin,
      "access-control-allow-methods": "GET, POST, OPTIONS",
      ...(requested === undefined ?
        {} :
        { "access-control-allow-headers": requested, vary: "Access-Control-Request-Headers" }),
      "access-control-max-age": String(preflightMaxAgeSeconds)
    }
  })
}

// Responses are immutable: the tracking API answers every accepted request with one shared `{"success":true}`, whose
// CORS copy is made once here instead of once a request (headers copied into a new object each time).
const withHeaders = new WeakMap<HttpServerResponse.HttpServerResponse, HttpServerResponse.HttpServerResponse>()

const withAllowedOrigin = (response: HttpServerResponse.HttpServerResponse) => {
  let answer = withHeaders.get(response)
  if (answer === undefined) {
    answer = HttpServerResponse.setHeaders(response, {
      ...allowOrigin,
      "access-control-expose-headers": exposedHeaders
    })
    withHeaders.set(response, answer)
  }
  return answer
}

/**
 * The app with CORS on the tracking API's paths (`/v1/…`): preflights answered, every answer readable cross-origin.
 * It maps the app's answer, so it wraps the app itself (or goes in as `HttpRouter.middleware(trackingCors, { global:
 * true })`), not the server's `middleware`, which runs once the answer is already sent.
 */
export const trackingCors = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (!isTrackingRequest(request)) return app
    if (request.method === "OPTIONS") return Effect.succeed(preflight(request))
    return Effect.map(app, withAllowedOrigin)
  })
