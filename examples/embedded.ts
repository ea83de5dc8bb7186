/**
 * Embedding hookrelay in an Effect service: an `Orders` service forwards its own domain events to
 * the engine, which keeps them in a SQLite outbox and delivers them as signed webhooks; the
 * `outcomes` stream tells the service what happened to each.
 *
 *   HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true RECEIVER_URL=http://127.0.0.1:9000/hook npx tsx examples/embedded.ts
 *
 * (the variable lets the engine deliver to a receiver on loopback, refused by default: REFERENCE §8)
 */
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import { layerSqlite, Relay, RelaySources } from "hookrelay"

// --- the application's own service --------------------------------------------------------------

export interface OrderPlaced {
  readonly orderId: string
  readonly customerId: string
  readonly total: number
}

export class Orders extends Context.Service<Orders, {
  readonly place: (order: OrderPlaced) => Effect.Effect<void, unknown>
}>()("example/Orders") {}

/** Places an order and forwards the domain event; `ingest` returns once the event is in the outbox. */
export const OrdersLive = Layer.effect(
  Orders,
  Effect.map(Relay, (relay) => ({
    place: (order: OrderPlaced) =>
      relay.ingest("shop", [{
        type: "track",
        userId: order.customerId,
        event: "Order Placed",
        messageId: `order-placed-${order.orderId}`,
        properties: { orderId: order.orderId, total: order.total, currency: "EUR" }
      }])
  }))
)

// --- wiring ----------------------------------------------------------------------------------

/** Registers the webhook destination (idempotent: an upsert). */
export const configureDestination = (receiverUrl: string) =>
  Effect.flatMap(RelaySources, (relaySources) =>
    relaySources.putSource({
      id: "shop",
      writeKey: "wk_shop_backend",
      webhooks: { enabled: true, sharedSecret: "shop-secret", endpoints: [{ url: receiverUrl }] }
    }))

/** Places `count` orders and waits until each delivery has an outcome. */
export const placeOrders = (count: number) =>
  Effect.gen(function*() {
    const relay = yield* Relay
    const orders = yield* Orders
    const outcomes = yield* relay.outcomes.pipe(Stream.take(count), Stream.runCollect, Effect.forkChild)
    yield* Effect.sleep("20 millis") // let the subscription start before the first event
    for (let i = 1; i <= count; i++) {
      yield* orders.place({ orderId: `o-${i}`, customerId: `c-${i}`, total: 10 * i })
    }
    return [...(yield* Fiber.join(outcomes))]
  })

export const layer = (directory: string) => OrdersLive.pipe(Layer.provideMerge(layerSqlite({ directory })))

if (import.meta.url === `file://${process.argv[1]}`) {
  const receiverUrl = process.env.RECEIVER_URL ?? "http://127.0.0.1:9000/hook"
  void Effect.gen(function*() {
    yield* configureDestination(receiverUrl)
    const outcomes = yield* placeOrders(3)
    for (const outcome of outcomes) yield* Effect.log(`${outcome.messageId}: ${outcome.status}`)
  }).pipe(Effect.provide(layer("./data/embedded-example")), Effect.runPromise)
}
