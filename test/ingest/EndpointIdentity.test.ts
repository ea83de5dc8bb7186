import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"

/**
 * An endpoint is (source, destination, URL) (REFERENCE §7b): two sources posting to one URL do not share its circuit,
 * health or disabled state; the admin API names endpoints by that triple, and a URL alone takes every one of it.
 */

type Health = { sourceId: string; destinationId: string; url: string; state: string; disabledReason: string | null }

describe("endpoint identity: (source, destination, URL)", () => {
  it.live(
    "the same URL in two sources: a 410 from it disables only the endpoint that got it",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startServer((request, response) => {
          response.statusCode = request.headers["x-from"] === "shop" ? 410 : 200
          response.end()
        })
        const app = yield* startApp({ egress: EgressPolicy.layer({ allowPrivateNetworks: true }) })
        const url = `${receiver.url}/hook`
        const endpoint = (from: string) => ({ enabled: true, endpoints: [{ url, headers: { "x-from": from } }] })
        for (const id of ["shop", "blog"]) {
          const put = yield* call(app.baseUrl, "PUT", `/admin/sources/${id}`, {
            body: {
              writeKey: `wk_identity_${id}`,
              webhooks: endpoint(id),
              destinations: [{ id: "crm", ...endpoint(id) }]
            }
          })
          expect(put.status).toBe(200)
        }
        const health = (sourceId: string, destinationId?: string) =>
          Effect.map(
            call(
              app.baseUrl,
              "GET",
              `/admin/endpoints?sourceId=${sourceId}${
                destinationId === undefined ? "" : `&destinationId=${destinationId}`
              }`
            ),
            (answer) => answer.body.endpoints as ReadonlyArray<Health>
          )

        // Only the shop's messages get the 410: its two endpoints of that URL are disabled, the blog's are not.
        expect(yield* track(app.baseUrl, "wk_identity_shop", { type: "track", event: "A", userId: "u" })).toBe(200)
        const shop = yield* pollUntil(
          health("shop"),
          (endpoints) => endpoints.every((endpoint) => endpoint.state === "disabled"),
          "the shop's endpoints disabled"
        )
        expect(shop.map((endpoint) => `${endpoint.destinationId} ${endpoint.disabledReason}`)).toStrictEqual([
          "webhooks HTTP 410 Gone",
          "crm HTTP 410 Gone"
        ])
        expect(yield* track(app.baseUrl, "wk_identity_blog", { type: "track", event: "B", userId: "u" })).toBe(200)
        yield* pollUntil(
          Effect.sync(() => receiver.requests.filter((request) => request.headers["x-from"] === "blog").length),
          (count) => count === 2,
          "the blog's two destinations delivered"
        )
        expect((yield* health("blog")).map((endpoint) => endpoint.state)).toStrictEqual(["healthy", "healthy"])

        // One endpoint by its triple; `destinationId` narrows the list.
        const enabled = yield* call(app.baseUrl, "POST", "/admin/endpoints/enable", {
          body: { sourceId: "shop", destinationId: "crm", url }
        })
        expect(enabled.body).toStrictEqual({
          url,
          state: "enabled",
          changed: true,
          endpoints: [{ sourceId: "shop", destinationId: "crm", url }]
        })
        expect((yield* health("shop", "crm")).map((endpoint) => endpoint.state)).toStrictEqual(["healthy"])
        expect((yield* health("shop", "webhooks")).map((endpoint) => endpoint.state)).toStrictEqual(["disabled"])
        expect((yield* call(app.baseUrl, "GET", "/admin/endpoints?sourceId=shop&destinationId=nope")).status).toBe(404)

        // A URL alone takes every endpoint of it, in every source.
        const disabled = yield* call(app.baseUrl, "POST", "/admin/endpoints/disable", { body: { url } })
        expect(disabled.body.endpoints).toHaveLength(4)
        for (const id of ["shop", "blog"]) {
          expect((yield* health(id)).map((endpoint) => endpoint.state)).toStrictEqual(["disabled", "disabled"])
        }
        const all = yield* call(app.baseUrl, "POST", "/admin/endpoints/enable", { body: { url } })
        expect(all.body.endpoints).toHaveLength(4)
        for (const id of ["shop", "blog"]) {
          expect((yield* health(id)).map((endpoint) => endpoint.state)).toStrictEqual(["healthy", "healthy"])
        }
      }),
    30_000
  )
})
