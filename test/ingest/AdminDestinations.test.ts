import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { startApp } from "../support/app.js"
import { call } from "../support/http.js"

/** A source's destinations through `PUT /admin/sources/{id}` (REFERENCE §1a, §7): stored, shown masked, refused by field. */

const crm = {
  id: "crm",
  name: "CRM",
  enabled: true,
  sharedSecret: "crm-shared-secret-0123456789",
  subscribe: { types: ["track", "identify"] },
  retryWindow: "1 hour",
  timeout: "10 seconds",
  endpoints: [{ url: "https://crm.example.com/in" }]
}
const warehouse = {
  id: "warehouse",
  enabled: true,
  signing: "standard",
  endpoints: [{ url: "https://dw.example.com" }]
}
const webhooks = { enabled: true, endpoints: [{ url: "https://hooks.example.com/in" }] }

describe("admin API: destinations", () => {
  it.live("PUT stores the list; the answer and GET show `webhooks` and the other destinations, secrets masked", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: { writeKey: "wk_destinations_admin", webhooks, destinations: [crm, warehouse] }
      })
      expect(put.status).toBe(200)
      const { generatedSecrets, ...shown } = put.body
      expect(Object.keys(generatedSecrets)).toStrictEqual(["warehouse"])
      expect(generatedSecrets.warehouse).toMatch(/^whsec_/)
      expect(shown).toMatchObject({
        id: "shop",
        webhooks: { enabled: true, hasSharedSecret: false, endpoints: webhooks.endpoints },
        destinations: [
          {
            id: "crm",
            name: "CRM",
            enabled: true,
            hasSharedSecret: true,
            subscribe: crm.subscribe,
            retryWindow: "1 hour",
            timeout: "10 seconds",
            endpoints: crm.endpoints
          },
          { id: "warehouse", enabled: true, hasSharedSecret: false, signing: "standard" }
        ]
      })
      expect(JSON.stringify(put.body)).not.toContain(crm.sharedSecret)
      expect(put.body.destinations[1].signingSecrets).toHaveLength(1)
      expect(put.body.generatedSecret).toBeUndefined()

      const got = yield* call(app.baseUrl, "GET", "/admin/sources/shop")
      const { generatedSecrets: _, ...saved } = put.body
      expect(got.body).toStrictEqual(saved)

      // The health list shows every destination's endpoints, in the source's order.
      const health = yield* call(app.baseUrl, "GET", "/admin/endpoints?sourceId=shop")
      expect(
        health.body.endpoints.map((endpoint: { destinationId: string; url: string; index: number }) =>
          `${endpoint.index} ${endpoint.destinationId} ${endpoint.url}`
        )
      ).toStrictEqual([
        "0 webhooks https://hooks.example.com/in",
        "1 crm https://crm.example.com/in",
        "2 warehouse https://dw.example.com"
      ])

      // Today's body touches the destination `webhooks` only.
      const old = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: { writeKey: "wk_destinations_admin", webhooks: { ...webhooks, enabled: false } }
      })
      expect(old.body.webhooks.enabled).toBe(false)
      expect(old.body.destinations.map((destination: { id: string }) => destination.id)).toStrictEqual([
        "crm",
        "warehouse"
      ])
      // The warehouse secret was kept, not generated again.
      expect(old.body.generatedSecrets).toBeUndefined()
    }))

  it.live("a bad destination is a 400 naming its field, and nothing is stored", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const bad = { ...warehouse, id: "bad", subscribe: { events: [""] } }
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: { writeKey: "wk_destinations_admin", destinations: [crm, warehouse, bad] }
      })
      expect(answer.status).toBe(400)
      expect(answer.body.errors).toStrictEqual([
        { path: "destinations[2].subscribe.events[0]", message: "must be 1 to 1024 characters" }
      ])
      const twice = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: { writeKey: "wk_destinations_admin", webhooks, destinations: [{ ...crm, id: "webhooks" }] }
      })
      expect(twice.status).toBe(400)
      expect(twice.body.errors).toStrictEqual([{
        path: "destinations[0].id",
        message: "\"webhooks\" is given as the webhooks object too: give it once"
      }])
      expect(Option.isNone(yield* app.sources.getSource("shop"))).toBe(true)
    }))

  it.live("a destination's endpoint at a refused address is a 400 naming it (REFERENCE §8)", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: EgressPolicy.layer({ allowPrivateNetworks: false }), dispatch: false })
      const internal = { ...warehouse, endpoints: [{ url: "https://dw.example.com" }, { url: "http://10.1.2.3/in" }] }
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: { writeKey: "wk_destinations_admin", destinations: [crm, internal] }
      })
      expect(answer.status).toBe(400)
      expect(answer.body.errors.map((issue: { path: string }) => issue.path)).toStrictEqual([
        "destinations[1].endpoints[1].url"
      ])
      expect(Option.isNone(yield* app.sources.getSource("shop"))).toBe(true)
    }))
})
