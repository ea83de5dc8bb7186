/**
 * The second floor of the ingest benchmarks (`bench/endToEnd.ts`, `bench/webSources.ts`): the same work as
 * `plainServer.mjs` — read the body, parse it as JSON, answer `200 {"success":true}` — served by Effect's
 * `HttpServer` (`effect/http`) with hookrelay's middleware (`xForwardedHeaders`, CORS headers, no tracing on tracking routes) on
 * `NodeHttpServer`, as hookrelay serves its tracking paths (any `POST /v1/…` here). Between the two floors is what the
 * framework costs a request on this machine; above the second is hookrelay's own work. Plain JavaScript, started with
 * plain `node`; sends its port to its parent over IPC and exits when the parent disconnects.
 */
/* global process */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

const routes = HttpRouter.add(
  "POST",
  "/v1/*",
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.text).pipe(
    Effect.flatMap((text) => Effect.try(() => JSON.parse(text))),
    Effect.as(HttpServerResponse.jsonUnsafe({ success: true })),
    Effect.orElseSucceed(() => HttpServerResponse.jsonUnsafe({ success: false }, { status: 400 }))
  )
)

// As `src/ingest/TrackingCors.ts` does to every answer of the tracking API (this floor gets no preflights).
const withCorsHeaders = (app) =>
  Effect.map(app, (response) =>
    HttpServerResponse.setHeaders(response, {
      "access-control-allow-origin": "*",
      "access-control-expose-headers": "retry-after"
    }))

const listening = Effect.flatMap(HttpServer.HttpServer, (server) =>
  Effect.sync(() => {
    const address = server.address
    process.send?.({ type: "listening", port: "port" in address ? address.port : 0 })
  }))

const serve = Layer.unwrap(
  Effect.map(
    HttpRouter.toHttpEffect(routes),
    (app) => HttpServer.serve(withCorsHeaders(app), HttpMiddleware.xForwardedHeaders({ trustedProxies: () => true }))
  )
).pipe(Layer.provide(Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)))

const app = Layer.mergeAll(serve, Layer.effectDiscard(listening)).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
)

process.on("disconnect", () => process.kill(process.pid, "SIGTERM"))
NodeRuntime.runMain(Layer.launch(app))
