// A consumer of the published package: type-checked against the tarball's .d.ts, then run.
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Fiber, Layer, Option, Stream } from "effect"
import { type DeliveryOutcome, layerSqlite, Relay, RelaySources } from "hookrelay"
import { createClient } from "hookrelay/client"
import { keepAliveDefault, layer as hookrelayServer, makeNodeServer, trackingCors } from "hookrelay/server"

const receiverPort = Number(process.env.RECEIVER_PORT)
const serverPort = Number(process.env.SERVER_PORT)

const program = Effect.gen(function*() {
  const relay = yield* Relay
  const relaySources = yield* RelaySources
  yield* relaySources.putSource({
    id: "consumer",
    writeKey: "wk_consumer",
    webhooks: { enabled: true, endpoints: [{ url: `http://127.0.0.1:${receiverPort}/hook` }] }
  })
  const outcomes = yield* relay.outcomes.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
  yield* Effect.sleep("50 millis")
  yield* relay.ingest("consumer", [{ type: "track", userId: "u1", event: "From Relay", messageId: "via-relay" }])
  const client = createClient({ writeKey: "wk_consumer", endpoint: `http://127.0.0.1:${serverPort}`, flushAt: 1 })
  yield* Effect.promise(() => client.track({ userId: "u2", event: "From Client", messageId: "via-client" }))
  yield* Effect.promise(() => client.close())
  const done: ReadonlyArray<DeliveryOutcome> = [...(yield* Fiber.join(outcomes))]
  // The web console ships in the package and is served by its server.
  const page = yield* Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${serverPort}/console/sources`)
    return [response.status, response.headers.get("content-type"), (await response.text()).includes("<div id=\"app\">")]
  })
  // The tracking API answers a web page's CORS preflight (the layer applies `trackingCors`, exported for `router`).
  const preflight = yield* Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${serverPort}/v1/t`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example.com", "access-control-request-headers": "authorization" }
    })
    return [response.status, response.headers.get("access-control-allow-origin"), typeof trackingCors]
  })
  console.log(JSON.stringify({ console: page, preflight }))
  console.log(JSON.stringify(done.map((outcome) => [outcome.messageId, outcome.status]).sort()))
})

const http = hookrelayServer({ adminToken: Option.none() }).pipe(
  Layer.provide(NodeHttpServer.layer(makeNodeServer(keepAliveDefault), { port: serverPort, host: "127.0.0.1" }))
)
const engine = layerSqlite({ directory: process.env.DATA_DIR })

program.pipe(
  Effect.provide(http.pipe(Layer.provideMerge(engine))),
  Effect.timeout("20 seconds"),
  Effect.runPromise
).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
