import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { sign } from "../../src/delivery/Signature.js"
import { generateSecret } from "../../src/delivery/StandardWebhooks.js"
import { verifiesWith } from "../delivery/standardSupport.js"
import { realWait, startServer, waitUntil } from "../delivery/support.js"
import { storeVariants } from "../ingest/FiltersUsageSupport.js"
import { startApp } from "../support/app.js"

const ok = (_request: unknown, response: { writeHead: (status: number) => { end: () => void } }) =>
  response.writeHead(200).end()

/** One source, four destinations, each with its own receiver: `broken` refuses until told otherwise. */
const setup = (store: (typeof storeVariants)[number]["store"]) =>
  Effect.gen(function*() {
    let brokenAnswers = 400
    const crm = yield* startServer(ok)
    const warehouse = yield* startServer(ok)
    const people = yield* startServer(ok)
    const broken = yield* startServer((_request, response) => response.writeHead(brokenAnswers).end())
    const app = yield* startApp({ store: store() })
    const warehouseSecret = generateSecret()
    yield* app.relaySources.putSource({
      id: "shop",
      writeKey: "wk_destinations_01",
      destinations: [
        { id: "crm", enabled: true, sharedSecret: "crm-secret", endpoints: [{ url: `${crm.url}/in` }] },
        {
          id: "warehouse",
          name: "Warehouse loader",
          enabled: true,
          signing: "standard",
          signingSecrets: [{ secret: warehouseSecret }],
          endpoints: [{ url: `${warehouse.url}/in` }]
        },
        { id: "broken", enabled: true, endpoints: [{ url: `${broken.url}/in` }] },
        { id: "people", enabled: true, subscribe: { types: ["identify"] }, endpoints: [{ url: `${people.url}/in` }] }
      ]
    })
    return { app, crm, warehouse, people, broken, warehouseSecret, fix: () => (brokenAnswers = 200) }
  })

const messageIdOf = (body: Buffer) => (JSON.parse(body.toString("utf8")) as { messageId: string }).messageId

describe.each(storeVariants)("destinations: fan-out on $name (REFERENCE §1a)", ({ skip, store }) => {
  it.live.skipIf(skip !== undefined)(
    "each destination gets what it subscribes to exactly once, signed its own way; a refusing one dead-letters alone",
    () =>
      Effect.gen(function*() {
        const { app, broken, crm, fix, people, warehouse, warehouseSecret } = yield* setup(store)
        const orders = ["o-1", "o-2", "o-3"].map((messageId) => ({
          type: "track",
          userId: "u-1",
          event: "Order Completed",
          messageId
        }))
        yield* app.relay.ingest("shop", [
          ...orders,
          { type: "identify", userId: "u-1", traits: { plan: "pro" }, messageId: "i-1" },
          { type: "track", userId: "u-1", event: "Hidden", messageId: "x-1", integrations: { Webhooks: false } }
        ])
        yield* waitUntil(() => crm.requests.length === 4 && warehouse.requests.length === 4, "crm and warehouse")
        yield* waitUntil(() => people.requests.length === 1, "people")
        const dead = () => app.relayMessages.deadLetters({ sourceId: "shop", limit: 10 })
        yield* Effect.gen(function*() {
          for (let i = 0; i < 100; i++) {
            if ((yield* dead()).length === 4) return
            yield* realWait(50)
          }
        })
        // Nothing more arrives: every delivery happened once.
        yield* realWait(200)
        const ids = (requests: ReadonlyArray<{ readonly body: Buffer }>) =>
          requests.map((request) => messageIdOf(request.body)).sort()
        expect(ids(crm.requests)).toStrictEqual(["i-1", "o-1", "o-2", "o-3"])
        expect(ids(warehouse.requests)).toStrictEqual(["i-1", "o-1", "o-2", "o-3"])
        expect(ids(people.requests)).toStrictEqual(["i-1"])
        expect(ids(broken.requests)).toStrictEqual(["i-1", "o-1", "o-2", "o-3"])

        // Each receiver verifies with its own secret; `webhook-id` is the message id.
        for (const request of crm.requests) {
          expect(request.headers["x-signature"]).toBe(sign("crm-secret", request.body))
          expect(request.headers["webhook-signature"]).toBeUndefined()
        }
        for (const request of warehouse.requests) {
          expect(verifiesWith(warehouseSecret, request)).toBe(true)
          expect(request.headers["webhook-id"]).toBe(messageIdOf(request.body))
          expect(request.headers["x-signature"]).toBeUndefined()
        }
        for (const request of [...people.requests, ...broken.requests]) {
          expect(request.headers["x-signature"]).toBeUndefined()
        }

        // The dead letters are the refusing destination's only.
        const letters = yield* dead()
        expect(letters.map((letter) => letter.destinationId)).toStrictEqual(["broken", "broken", "broken", "broken"])
        const jobs = yield* app.relayMessages.messageJobs("o-1")
        expect(jobs.map((job) => `${job.destinationId}:${job.status}`).sort()).toStrictEqual([
          "broken:dead",
          "crm:delivered",
          "warehouse:delivered"
        ])

        // Replayed, a dead letter goes to its destination only.
        fix()
        const replayed = letters.find((letter) => letter.messageId === "o-1")!
        expect(yield* app.relayMessages.replayDeadLetter(replayed.id)).toBe(true)
        yield* waitUntil(() => broken.requests.length === 5, "the replay")
        yield* realWait(200)
        expect(messageIdOf(broken.requests[4]!.body)).toBe("o-1")
        expect([crm.requests.length, warehouse.requests.length, people.requests.length]).toStrictEqual([4, 4, 1])
        const after = yield* app.relayMessages.messageJobs("o-1")
        expect(after.find((job) => job.destinationId === "broken")?.status).toBe("delivered")
      }),
    30_000
  )

  it.live.skipIf(skip !== undefined)(
    "re-applying a body with the webhooks object leaves the other destinations; a job of a deleted one dead-letters",
    () =>
      Effect.gen(function*() {
        const { app, crm } = yield* setup(store)
        const hooks = yield* startServer(ok)
        const saved = yield* app.relaySources.putSource({
          id: "shop",
          writeKey: "wk_destinations_01",
          webhooks: { enabled: true, endpoints: [{ url: `${hooks.url}/hook` }] }
        })
        expect(saved.destinations.map((destination) => destination.id)).toStrictEqual([
          "webhooks",
          "crm",
          "warehouse",
          "broken",
          "people"
        ])
        expect(saved.webhooks?.endpoints[0]?.url).toBe(`${hooks.url}/hook`)
        yield* app.relay.ingest("shop", [{ type: "track", userId: "u", event: "E", messageId: "m-1" }])
        yield* waitUntil(() => hooks.requests.length === 1 && crm.requests.length === 1, "webhooks and crm")

        // The list replaced by one without crm: crm's pending jobs cannot be delivered any more.
        yield* app.relaySources.putSource({
          id: "shop",
          writeKey: "wk_destinations_01",
          destinations: [{ id: "webhooks", enabled: true, endpoints: [{ url: `${hooks.url}/hook` }] }]
        })
        // The dispatcher reads sources through its own short-lived cache (REFERENCE §7: changes show within 2 s).
        yield* realWait(2_100)
        yield* app.outbox.insertJobs([{
          sourceId: "shop",
          destinationId: "crm",
          messageId: "m-2",
          kind: "delete",
          body: new TextEncoder().encode("{}")
        }], Date.now())
        yield* Effect.gen(function*() {
          for (let i = 0; i < 100; i++) {
            const [job] = yield* app.relayMessages.messageJobs("m-2")
            if (job?.status === "dead") return
            yield* realWait(50)
          }
        })
        const [job] = yield* app.relayMessages.messageJobs("m-2")
        expect(job).toMatchObject({ destinationId: "crm", status: "dead", lastError: "destination deleted" })
      }),
    30_000
  )
})
