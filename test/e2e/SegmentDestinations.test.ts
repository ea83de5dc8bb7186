import { describe, expect, it } from "@effect/vitest"
import { Analytics } from "@segment/analytics-node"
import { Effect } from "effect"
import { generateSecret } from "../../src/delivery/StandardWebhooks.js"
import { verifiesWith } from "../delivery/standardSupport.js"
import { realWait, type ReceivedRequest, startServer, waitUntil } from "../delivery/support.js"
import { storeVariants } from "../ingest/FiltersUsageSupport.js"
import { startApp } from "../support/app.js"
import { signatureOf } from "../support/http.js"

/**
 * The real Segment client, unchanged, through hookrelay to three destinations of one source (REFERENCE §1a): each
 * receiver gets exactly the calls its `subscribe` asks for, once each, signed with its own secret and verified by it.
 */

const writeKey = "wk_segment_destinations_01"
const allSecret = "segment-all-shared-secret"
const peopleSecret = "segment-people-shared-secret"

const messageIdOf = (request: ReceivedRequest) =>
  (JSON.parse(request.body.toString("utf8")) as { messageId: string })
    .messageId

const typeAndEventOf = (request: ReceivedRequest) => {
  const body = JSON.parse(request.body.toString("utf8")) as { type: string; event?: string }
  return body.event === undefined ? body.type : `${body.type}:${body.event}`
}

describe.each(storeVariants)("@segment/analytics-node to three destinations on $name", ({ skip, store }) => {
  it.live.skipIf(skip !== undefined)(
    "each receiver gets what it subscribes to, once, signed with its secret",
    () =>
      Effect.gen(function*() {
        const ok = (_request: ReceivedRequest, response: import("node:http").ServerResponse) =>
          response.writeHead(200).end("ok")
        const all = yield* startServer(ok)
        const orders = yield* startServer(ok)
        const people = yield* startServer(ok)
        const ordersSecret = generateSecret()
        const app = yield* startApp({ store: store() })
        yield* app.relaySources.putSource({
          id: "node-server",
          writeKey,
          destinations: [
            { id: "everything", enabled: true, sharedSecret: allSecret, endpoints: [{ url: `${all.url}/in` }] },
            {
              id: "orders",
              enabled: true,
              signing: "standard",
              signingSecrets: [{ secret: ordersSecret }],
              subscribe: { types: ["track"], events: ["Order Completed"] },
              endpoints: [{ url: `${orders.url}/in` }]
            },
            {
              id: "people",
              enabled: true,
              sharedSecret: peopleSecret,
              subscribe: { types: ["identify", "group"] },
              endpoints: [{ url: `${people.url}/in` }]
            }
          ]
        })

        const analytics = new Analytics({
          writeKey,
          host: app.baseUrl,
          path: "/v1/batch",
          flushAt: 20,
          flushInterval: 60_000,
          maxRetries: 0
        })
        const answers: Array<number> = []
        const errors: Array<unknown> = []
        analytics.on("http_response", (response) => answers.push(response.status))
        analytics.on("error", (error) => errors.push(error))
        analytics.identify({ userId: "user-1", traits: { email: "ada@example.com" } })
        analytics.track({ userId: "user-1", event: "Order Completed", properties: { total: 39.95 } })
        analytics.track({ userId: "user-1", event: "Product Viewed", properties: { sku: "A-1" } })
        analytics.page({ userId: "user-1", name: "Pricing" })
        analytics.group({ userId: "user-1", groupId: "acme", traits: { name: "Acme Inc" } })
        analytics.track({ userId: "user-2", event: "Order Completed", properties: { total: 5 } })
        yield* Effect.tryPromise(() => analytics.closeAndFlush({ timeout: 5_000 }))
        expect(errors).toStrictEqual([])
        expect(answers).toStrictEqual([200])

        yield* waitUntil(
          () => all.requests.length >= 6 && orders.requests.length >= 2 && people.requests.length >= 2,
          "every destination's deliveries",
          15_000
        )
        // Nothing more arrives: each job was delivered once.
        yield* realWait(500)
        expect(all.requests.map(typeAndEventOf).sort()).toStrictEqual([
          "group",
          "identify",
          "page",
          "track:Order Completed",
          "track:Order Completed",
          "track:Product Viewed"
        ])
        expect(orders.requests.map(typeAndEventOf)).toStrictEqual(["track:Order Completed", "track:Order Completed"])
        expect(people.requests.map(typeAndEventOf).sort()).toStrictEqual(["group", "identify"])
        expect(new Set(all.requests.map(messageIdOf)).size).toBe(6)

        // Each receiver verifies with its own secret, and only with it.
        for (const request of all.requests) {
          expect(request.headers["x-signature"]).toBe(signatureOf(allSecret, request.body))
        }
        for (const request of people.requests) {
          expect(request.headers["x-signature"]).toBe(signatureOf(peopleSecret, request.body))
        }
        for (const request of orders.requests) {
          expect(verifiesWith(ordersSecret, request)).toBe(true)
          expect(request.headers["x-signature"]).toBeUndefined()
        }
        // The copies of one message carry the same body and webhook id wherever they went.
        const [order] = orders.requests
        const same = all.requests.find((request) => messageIdOf(request) === messageIdOf(order!))!
        expect(same.body.equals(order!.body)).toBe(true)
        expect(order!.headers["webhook-id"]).toBe(messageIdOf(order!))

        // The message log names the destination of each job.
        const jobs = yield* app.relayMessages.messageJobs(messageIdOf(order!))
        expect(jobs.map((job) => [job.destinationId, job.status]).sort()).toStrictEqual([
          ["everything", "delivered"],
          ["orders", "delivered"]
        ])
      }),
    60_000
  )
})
