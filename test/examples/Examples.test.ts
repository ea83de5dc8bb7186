import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac } from "node:crypto"
import type { AddressInfo } from "node:net"
import { configureDestination, layer, placeOrders } from "../../examples/embedded.js"
import { makeApp } from "../../examples/plain-node.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"

describe("examples", () => {
  it.live("embedded: an Effect service forwards its events and sees every outcome", () =>
    Effect.gen(function*() {
      const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
      const directory = yield* tempDirectory
      const outcomes = yield* Effect.gen(function*() {
        yield* configureDestination(`${receiver.url}/hook`)
        return yield* placeOrders(3)
      }).pipe(Effect.provide(layer(directory)))
      expect(outcomes.map((outcome) => [outcome.messageId, outcome.status]).sort()).toStrictEqual([
        ["order-placed-o-1", "delivered"],
        ["order-placed-o-2", "delivered"],
        ["order-placed-o-3", "delivered"]
      ])
      const request = receiver.requests.find((r) => r.body.includes("order-placed-o-2"))!
      expect(JSON.parse(request.body.toString("utf8"))).toMatchObject({
        type: "track",
        event: "Order Placed",
        userId: "c-2",
        properties: { orderId: "o-2", total: 20, currency: "EUR" }
      })
      expect(request.headers["x-signature"]).toBe(createHmac("sha1", "shop-secret").update(request.body).digest("hex"))
    }))

  it.live("plain Node: a request handler records through the Promise client, close() flushes", () =>
    Effect.gen(function*() {
      const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
      const app = yield* startApp()
      yield* app.relaySources.putSource({
        id: "web",
        writeKey: "wk_web_backend",
        webhooks: { enabled: true, endpoints: [{ url: receiver.url }] }
      })
      const { analytics, server } = makeApp(app.baseUrl)
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve())))
      const port = (server.address() as AddressInfo).port
      const answer = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/signup?user=ada`, { method: "POST" }).then((r) => r.status)
      )
      expect(answer).toBe(201)
      yield* Effect.promise(() => analytics.close())
      server.close()
      yield* waitUntil(() => receiver.requests.length === 2, "identify and track delivered")
      const types = receiver.requests.map((r) => JSON.parse(r.body.toString("utf8")).type).sort()
      expect(types).toStrictEqual(["identify", "track"])
    }))
})
