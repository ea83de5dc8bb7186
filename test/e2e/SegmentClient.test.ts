import { describe, expect, it } from "@effect/vitest"
import { Analytics } from "@segment/analytics-node"
import { Effect } from "effect"
import { type ReceivedRequest, startServer, waitUntil } from "../delivery/support.js"
import { type App, startApp } from "../support/app.js"
import { pollUntil, signatureOf } from "../support/http.js"

/**
 * The real Segment client, unchanged, pointed at hookrelay (REFERENCE §2: "existing Segment client
 * libraries pointed at hookrelay must work unchanged"): every call it makes arrives at the
 * webhook with the REFERENCE §3 body, signed.
 */

const writeKey = "wk_segment_node_e2e_01"
const sharedSecret = "segment-e2e-shared-secret"
const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** One message as analytics-node put it on the wire (read back from its `http_request` event). */
interface SentMessage {
  readonly type: string
  readonly messageId: string
  readonly timestamp: string
  readonly [key: string]: unknown
}

interface SentBatch {
  readonly batch: ReadonlyArray<SentMessage>
  readonly writeKey: string
  readonly sentAt: string
}

const signature = (body: Buffer) => signatureOf(sharedSecret, body)

const allDelivered = (app: App, messageIds: ReadonlyArray<string>) =>
  pollUntil(
    Effect.forEach(messageIds, (id) => app.relayMessages.messageJobs(id)),
    (jobs) => jobs.every((forMessage) => forMessage.length === 1 && forMessage[0]!.status === "delivered"),
    "every job is delivered"
  )

const setup = Effect.gen(function*() {
  const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
  const app = yield* startApp()
  yield* app.relaySources.putSource({
    id: "node-server",
    writeKey,
    webhooks: { enabled: true, sharedSecret, endpoints: [{ url: `${receiver.url}/hook?from=segment` }] }
  })
  return { app, receiver }
})

/** A client as an application would create it, recording what it sent and what it was answered. */
const makeClient = (app: App, options: { readonly flushAt: number }) =>
  Effect.sync(() => {
    const analytics = new Analytics({
      writeKey,
      host: app.baseUrl,
      path: "/v1/batch",
      flushAt: options.flushAt,
      flushInterval: 60_000,
      maxRetries: 0
    })
    const sent: Array<SentBatch> = []
    const answers: Array<number> = []
    const errors: Array<unknown> = []
    analytics.on("http_request", (request) => sent.push(JSON.parse(request.body) as SentBatch))
    analytics.on("http_response", (response) => answers.push(response.status))
    analytics.on("error", (error) => errors.push(error))
    return { analytics, sent, answers, errors }
  })

const closeAndFlush = (analytics: Analytics) =>
  Effect.tryPromise({
    try: () => analytics.closeAndFlush({ timeout: 5_000 }),
    catch: (cause) => new Error(`closeAndFlush failed: ${String(cause)}`)
  })

/** The six calls, with the fields a server-side application typically passes. */
const sendAllTypes = (analytics: Analytics) => {
  analytics.identify({
    userId: "user-1",
    anonymousId: "anon-1",
    traits: { email: "ada@example.com", plan: "pro", logins: 3 }
  })
  analytics.track({
    userId: "user-1",
    event: "Order Completed",
    properties: { orderId: "o-1", revenue: 39.95, products: [{ sku: "A-1", quantity: 2 }] }
  })
  analytics.page({
    userId: "user-1",
    category: "Docs",
    name: "Pricing",
    properties: {
      path: "/pricing",
      referrer: "https://www.example.com/",
      title: "Pricing",
      url: "https://example.com/pricing?plan=pro"
    }
  })
  analytics.screen({
    anonymousId: "anon-2",
    name: "Checkout",
    properties: { step: 2 },
    context: {
      device: { model: "iPhone15,2", type: "ios" },
      os: { name: "iOS", version: "17.1" },
      app: { build: "512", name: "Shop", version: "4.2.0" }
    }
  })
  analytics.group({ userId: "user-1", groupId: "acme", traits: { name: "Acme Inc", employees: 42 } })
  analytics.alias({ userId: "user-1", previousId: "anon-1" })
}

/**
 * The REFERENCE §3 body hookrelay must deliver for a message analytics-node sent, given the batch it
 * travelled in and the receipt time hookrelay stamped. The event time is skew-corrected with the
 * batch's `sentAt` (REFERENCE §2), and the device's own time is kept as `originalTimestamp`.
 */
const expectedBody = (sent: SentMessage, batch: SentBatch, receivedAt: string, library: string) => {
  const common = {
    version: 1,
    type: sent.type,
    messageId: sent.messageId,
    timestamp: new Date(Date.parse(receivedAt) - (Date.parse(batch.sentAt) - Date.parse(sent.timestamp)))
      .toISOString(),
    receivedAt,
    sentAt: batch.sentAt,
    originalTimestamp: sent.timestamp,
    context: { library: { name: "@segment/analytics-node", version: library } }
  }
  switch (sent.type) {
    case "identify":
      return {
        ...common,
        userId: "user-1",
        anonymousId: "anon-1",
        traits: { email: "ada@example.com", plan: "pro", logins: 3 }
      }
    case "track":
      return {
        ...common,
        userId: "user-1",
        event: "Order Completed",
        properties: { orderId: "o-1", revenue: 39.95, products: [{ sku: "A-1", quantity: 2 }] }
      }
    case "page":
      return {
        ...common,
        userId: "user-1",
        name: "Pricing",
        category: "Docs",
        properties: {
          path: "/pricing",
          referrer: "https://www.example.com/",
          title: "Pricing",
          url: "https://example.com/pricing?plan=pro",
          // analytics-node copies the page's category into its properties; hookrelay keeps what it was sent.
          category: "Docs"
        }
      }
    case "screen":
      return {
        ...common,
        anonymousId: "anon-2",
        name: "Checkout",
        properties: { step: 2 },
        context: {
          ...common.context,
          device: { model: "iPhone15,2", type: "ios" },
          os: { name: "iOS", version: "17.1" },
          app: { build: "512", name: "Shop", version: "4.2.0" }
        }
      }
    case "group":
      return { ...common, userId: "user-1", groupId: "acme", traits: { name: "Acme Inc", employees: 42 } }
    case "alias":
      // Keys with spaces, and neither userId nor properties (REFERENCE §3).
      return { ...common, "Previous ID": "anon-1", "User ID": "user-1" }
    default:
      throw new Error(`unexpected type ${sent.type}`)
  }
}

const parse = (request: ReceivedRequest) => JSON.parse(request.body.toString("utf8")) as Record<string, unknown>

describe("@segment/analytics-node against hookrelay", () => {
  it.live("identify, track, page, screen, group, alias arrive with the REFERENCE §3 body and a valid signature", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup
      const client = yield* makeClient(app, { flushAt: 20 })
      const before = Date.now()
      sendAllTypes(client.analytics)
      yield* closeAndFlush(client.analytics)
      const after = Date.now()

      // One batch, answered 200, that carried all six calls with analytics-node's own fields.
      expect(client.errors).toStrictEqual([])
      expect(client.answers).toStrictEqual([200])
      expect(client.sent).toHaveLength(1)
      const batch = client.sent[0]!
      expect(batch.writeKey).toBe(writeKey)
      expect(batch.batch.map((message) => message.type)).toStrictEqual([
        "identify",
        "track",
        "page",
        "screen",
        "group",
        "alias"
      ])
      for (const message of batch.batch) {
        expect(message.messageId).toMatch(/^node-next-\d+-[0-9a-f-]{36}$/)
        expect(message._metadata).toMatchObject({ jsRuntime: "node" })
      }

      yield* waitUntil(() => receiver.requests.length >= 6, "six deliveries")
      yield* allDelivered(app, batch.batch.map((message) => message.messageId))
      expect(receiver.requests).toHaveLength(6)

      const sentById = new Map(batch.batch.map((message) => [message.messageId, message]))
      const deliveredTypes: Array<string> = []
      for (const request of receiver.requests) {
        expect(request.method).toBe("POST")
        expect(request.url).toBe("/hook?from=segment")
        expect(request.headers["content-type"]).toBe("application/json")
        expect(request.headers["user-agent"]).toBe("hookrelay/1.0")
        expect(request.headers["x-signature"]).toBe(signature(request.body))
        expect(request.headers["x-signature"]).toMatch(/^[0-9a-f]{40}$/)

        const body = parse(request)
        const sent = sentById.get(body.messageId as string)
        expect(sent, `a delivery for a message analytics-node sent (${String(body.messageId)})`).toBeDefined()
        const receivedAt = body.receivedAt as string
        expect(receivedAt).toMatch(isoWithMillis)
        expect(Date.parse(receivedAt)).toBeGreaterThanOrEqual(before)
        expect(Date.parse(receivedAt)).toBeLessThanOrEqual(after)
        for (const field of ["timestamp", "sentAt", "originalTimestamp"]) {
          expect(body[field], field).toMatch(isoWithMillis)
        }
        expect(body).toStrictEqual(expectedBody(sent!, batch, receivedAt, client.analytics.VERSION))
        deliveredTypes.push(body.type as string)
      }
      expect(deliveredTypes.sort()).toStrictEqual(["alias", "group", "identify", "page", "screen", "track"])
    }))

  it.live("flushAt 1: every call is its own request, and each message is delivered once", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup
      const client = yield* makeClient(app, { flushAt: 1 })
      sendAllTypes(client.analytics)
      yield* closeAndFlush(client.analytics)

      expect(client.errors).toStrictEqual([])
      expect(client.answers).toStrictEqual([200, 200, 200, 200, 200, 200])
      const sent = client.sent.flatMap((batch) => batch.batch)
      expect(sent).toHaveLength(6)

      yield* waitUntil(() => receiver.requests.length >= 6, "six deliveries")
      yield* allDelivered(app, sent.map((message) => message.messageId))
      expect(receiver.requests.map((request) => parse(request).messageId).sort()).toStrictEqual(
        sent.map((message) => message.messageId).sort()
      )
      for (const request of receiver.requests) {
        expect(request.headers["x-signature"]).toBe(signature(request.body))
      }
    }))
})
