/**
 * The hookrelay HTTP server as a layer: mount the Segment-compatible tracking API, the admin API,
 * `/healthz` and `/metrics` on any Effect `HttpServer` (`effect/http`). It needs the `Relay` services
 * (from `hookrelay`'s `layerSqlite` / `layerPg`).
 *
 * @example
 * ```ts
 * import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
 * import { Layer, Option } from "effect"
 * import { layerSqlite } from "hookrelay"
 * import { layer as hookrelayServer, makeNodeServer } from "hookrelay/server"
 *
 * hookrelayServer({ adminToken: Option.none() }).pipe(
 *   Layer.provide(NodeHttpServer.layer(makeNodeServer("65 seconds"), { port: 8080 })),
 *   Layer.provide(layerSqlite()),
 *   Layer.launch,
 *   NodeRuntime.runMain
 * )
 * ```
 *
 * @module
 */
export {
  /** The idle keep-alive `npm start` uses: 65 s, longer than a load balancer's or proxy's own (see `makeNodeServer`). */
  keepAliveDefault,
  /**
   * A `node:http` server for `NodeHttpServer.layer` whose idle connections outlive those of the proxy in front of it
   * (Node's own 5 s default makes an AWS ALB or nginx answer 502 now and then).
   */
  makeNodeServer
} from "./ingest/NodeServer.js"
export {
  /** The HTTP app as a layer over the `HttpServer` and the `Relay` services in context. */
  layer,
  /** The router itself, to combine with your own routes before serving. */
  router
} from "./ingest/Server.js"
export type {
  /** `adminToken`: the bearer token of the admin API; `Option.none()` disables it. */
  ServerOptions
} from "./ingest/Server.js"
export {
  /**
   * CORS on the tracking API's paths (`/v1/…`), for web sources (analytics.js on other origins): `layer` applies it;
   * apply it to your app when you serve `router` yourself.
   */
  trackingCors
} from "./ingest/TrackingCors.js"
