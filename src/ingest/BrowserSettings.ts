import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Relay } from "../relay/Relay.js"
import { errorResponse } from "./ErrorBody.js"
import { storeUnavailableResponse } from "./StoreUnavailable.js"

/**
 * The settings analytics.js loads before it sends anything. It asks `<cdnURL>/v1/projects/<writeKey>/settings`, Segment's
 * CDN unless told otherwise, which knows no hookrelay write key: the library would then not start at all. Pointed at
 * hookrelay (`AnalyticsBrowser.load({ writeKey, cdnURL: "https://hookrelay.example.com" })`, or `analytics._cdn` in
 * the snippet), it gets its settings here, and they send every message back to this server: Segment's custom-proxy
 * setup, with hookrelay as both the CDN and the API.
 */
export interface BrowserSettings {
  readonly integrations: {
    readonly "Segment.io": { readonly apiKey: string; readonly apiHost: string; readonly protocol: "http" | "https" }
  }
  /** analytics.js would otherwise send its own performance counters to api.segment.io (`/v1/m`). */
  readonly metrics: { readonly sampleRate: 0 }
  readonly remotePlugins: ReadonlyArray<never>
}

/**
 * Where the browser reaches this server: the host it asked (the proxy's `X-Forwarded-Host` where there is one) and the
 * scheme the proxy says it terminated. hookrelay itself serves plain HTTP. Read here because Effect's
 * `xForwardedHeaders` uses the forwarded host only alongside an `X-Forwarded-For` of as many entries.
 */
const publicOrigin = (request: HttpServerRequest.HttpServerRequest) => {
  const forwardedProto = request.headers["x-forwarded-proto"]?.split(",")[0]?.trim().toLowerCase()
  const forwardedHost = request.headers["x-forwarded-host"]?.split(",")[0]?.trim()
  return {
    host: forwardedHost !== undefined && forwardedHost !== "" ? forwardedHost : request.headers.host ?? "",
    protocol: forwardedProto === "https" ? "https" as const : "http" as const
  }
}

export const browserSettings = (
  writeKey: string,
  origin: { readonly host: string; readonly protocol: "http" | "https" }
): BrowserSettings => ({
  integrations: { "Segment.io": { apiKey: writeKey, apiHost: `${origin.host}/v1`, protocol: origin.protocol } },
  metrics: { sampleRate: 0 },
  remotePlugins: []
})

const settingsRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const relay = yield* Relay
  const writeKey = (yield* HttpRouter.params).writeKey ?? ""
  return yield* relay.authenticate(writeKey).pipe(
    Effect.map(() =>
      HttpServerResponse.jsonUnsafe(browserSettings(writeKey, publicOrigin(request)), {
        // Built from the request's host: never kept by a shared cache for another host's visitors.
        headers: { "cache-control": "private, max-age=60" }
      })
    ),
    Effect.catchTags({
      UnknownSource: () =>
        Effect.succeed(errorResponse(404, "not_found", "unknown write key", [{
          path: "writeKey",
          message: "is not a known write key"
        }])),
      StoreError: (error) => storeUnavailableResponse("could not read a source for the browser settings", error)
    })
  )
})

/** `GET /v1/projects/:writeKey/settings`, for analytics.js (see `BrowserSettings`). */
export const browserSettingsRoutes = [HttpRouter.route("GET", "/v1/projects/:writeKey/settings", settingsRoute)]
