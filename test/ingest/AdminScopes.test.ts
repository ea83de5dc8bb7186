import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import type { HttpApiEndpoint } from "effect/http-api"
import { AdminContract } from "../../src/ingest/AdminContract.js"
import { RequiredScope, scopes, SpansAllSources } from "../../src/ingest/AdminScopes.js"
import { startServer } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { createKey, putSource } from "./adminKeysSupport.js"

/** Scopes and source limits of API keys (REFERENCE §7c), over every route the contract serves. */

/** Every endpoint of the served contract: a route added to it is in this list without anyone writing it here. */
const endpoints: ReadonlyArray<{ readonly group: string; readonly endpoint: HttpApiEndpoint.Top }> = Object.values(
  AdminContract.groups
).flatMap((group) => Object.values(group.endpoints).map((endpoint) => ({ group: group.identifier, endpoint })))

const values: Record<string, string> = { sourceId: "web", destinationId: "webhooks" }

/** The route's path with its parameters filled in. */
const pathOf = (endpoint: HttpApiEndpoint.Top) =>
  endpoint.path.replace(/:(\w+)/g, (_, name: string) => values[name] ?? "x")

const requiredScope = (endpoint: HttpApiEndpoint.Top) =>
  Context.getOrElse(endpoint.annotations, RequiredScope, () => undefined)

describe("admin API: scopes", () => {
  it("every route of the contract declares its scope", () => {
    expect(endpoints.length).toBeGreaterThan(30)
    for (const { endpoint } of endpoints) {
      expect(requiredScope(endpoint), `${endpoint.method} ${endpoint.path}`).toBeDefined()
    }
  })

  it.live(
    "every route × every scope: 403 naming the missing scope, anything else when the key has it",
    () =>
      Effect.gen(function*() {
        const app = yield* startApp({ dispatch: false })
        yield* putSource(app, "web")
        const keys = yield* Effect.forEach(
          scopes,
          (scope) =>
            Effect.map(createKey(app, { name: `only ${scope}`, scopes: [scope] }), (key) => ({ scope, ...key }))
        )
        const document = (yield* call(app.baseUrl, "GET", "/admin/openapi.json")).body
        for (const { endpoint, group } of endpoints) {
          const required = requiredScope(endpoint)!
          const route = `${endpoint.method} ${endpoint.path}`
          const operation = document.paths[endpoint.path.replace(/:(\w+)/g, "{$1}")][endpoint.method.toLowerCase()]
          expect(operation.operationId).toBe(`${group}.${endpoint.identifier}`)
          expect(operation.security, route).toStrictEqual([{ bearer: required === "any" ? [] : [required] }])
          expect(operation["x-hookrelay-scope"], route).toBe(required === "any" ? null : required)
          expect(operation.responses["403"], route).toBeDefined()
          for (const key of keys) {
            const answer = yield* call(app.baseUrl, endpoint.method, pathOf(endpoint), {
              authorization: key.authorization,
              ...(endpoint.method !== "GET" && endpoint.method !== "DELETE" && { body: {} })
            })
            const allowed = required === "any" || key.scope === "admin" || key.scope === required
            if (allowed) {
              expect([401, 403], `${route} with ${key.scope}: ${answer.text}`).not.toContain(answer.status)
            } else {
              expect(answer.status, `${route} with ${key.scope}`).toBe(403)
              expect(answer.body).toMatchObject({ success: false, code: "forbidden" })
              expect(answer.body.message).toContain(`needs scope ${required}`)
            }
          }
        }
      }),
    60_000
  )
})

describe("admin API: a key limited to sources", () => {
  it.live(
    "sees and changes only its sources: lists filtered, another source's routes 404, all-source routes 403",
    () =>
      Effect.gen(function*() {
        const receiver = yield* startServer((_, res) => res.writeHead(404).end("no such hook"))
        const app = yield* startApp()
        for (const id of ["web", "ios"]) yield* putSource(app, id, `${receiver.url}/hook`)
        const { authorization } = yield* createKey(app, {
          name: "web team",
          scopes: ["sources:read", "sources:write", "messages:read", "replay", "privacy"],
          sourceIds: ["web"]
        })
        const limited = (method: string, path: string, body?: unknown) =>
          call(app.baseUrl, method, path, { authorization, ...(body !== undefined && { body }) })
        for (const id of ["web", "ios"]) {
          expect(
            yield* track(app.baseUrl, `wk_keys_${id}_0123456789`, { userId: "u1", event: "E", messageId: `m-${id}` })
          )
            .toBe(200)
        }
        const dead = yield* pollUntil(
          call(app.baseUrl, "GET", "/admin/dead-letters"),
          (answer) => answer.body?.deadLetters?.length === 2,
          "both messages are dead letters"
        )
        const iosJob = dead.body.deadLetters.find((job: { sourceId: string }) => job.sourceId === "ios").id as string
        const webJob = dead.body.deadLetters.find((job: { sourceId: string }) => job.sourceId === "web").id as string

        // Lists hold the key's sources only.
        expect((yield* limited("GET", "/admin/sources")).body.sources.map((s: { id: string }) => s.id)).toStrictEqual([
          "web"
        ])
        const letters = (yield* limited("GET", "/admin/dead-letters")).body.deadLetters
        expect(letters.map((job: { sourceId: string }) => job.sourceId)).toStrictEqual(["web"])
        const messages = (yield* limited("GET", "/admin/messages?userId=u1")).body.messages
        expect(messages.map((m: { messageId: string }) => m.messageId)).toStrictEqual(["m-web"])
        expect((yield* limited("GET", "/admin/messages/m-web")).status).toBe(200)

        // Another source is not there for this key, whatever the route.
        const hidden: ReadonlyArray<readonly [string, string, unknown?]> = [
          ["GET", "/admin/sources/ios"],
          ["PUT", "/admin/sources/ios", { writeKey: "wk_taken_over_0123456789" }],
          ["DELETE", "/admin/sources/ios"],
          ["POST", "/admin/sources/ios/secrets/rotate", {}],
          ["GET", "/admin/sources/ios/destinations"],
          ["DELETE", "/admin/sources/ios/destinations/webhooks"],
          ["GET", "/admin/sources/ios/usage"],
          ["GET", "/admin/sources/ios/messages"],
          ["GET", "/admin/messages?sourceId=ios"],
          ["GET", "/admin/messages/m-ios"],
          ["GET", "/admin/dead-letters?sourceId=ios"],
          ["POST", `/admin/dead-letters/${iosJob}/replay`],
          ["GET", "/admin/endpoints?sourceId=ios"],
          ["POST", "/admin/endpoints/disable", { url: `${receiver.url}/hook`, sourceId: "ios" }],
          ["POST", "/admin/dead-letters/purge", { sourceId: "ios" }],
          ["PUT", "/admin/sources/ios/audiences/vip", { userIds: ["u1"] }]
        ]
        for (const [method, path, body] of hidden) {
          const answer = yield* limited(method, path, body)
          expect(answer.status, `${method} ${path}`).toBe(404)
          expect(answer.body.code).toBe("not_found")
        }
        expect((yield* call(app.baseUrl, "GET", "/admin/sources/ios")).status).toBe(200)
        expect((yield* call(app.baseUrl, "GET", "/admin/dead-letters?sourceId=ios")).body.deadLetters).toHaveLength(1)

        // A URL alone would reach every source's endpoints: the limited key names its source.
        const byUrl = yield* limited("POST", "/admin/endpoints/disable", { url: `${receiver.url}/hook` })
        expect(byUrl.status).toBe(400)
        expect(byUrl.body.errors).toStrictEqual([{
          path: "sourceId",
          message: "is required for a key limited to sources"
        }])

        // Routes over every source are refused, saying why.
        for (
          const [method, path, body] of [["GET", "/admin/backlog"], ["POST", "/admin/deletions", {
            userId: "u1"
          }]] as const
        ) {
          const answer = yield* limited(method, path, body)
          expect(answer.status, path).toBe(403)
          expect(answer.body.message).toContain("needs a key without source limits")
        }
        expect(Context.getOrElse(
          AdminContract.groups.deletions.endpoints.createDeletion.annotations,
          SpansAllSources,
          () => false
        )).toBe(true)

        // Its own source works as for any key with these scopes.
        expect((yield* limited("GET", "/admin/sources/web")).status).toBe(200)
        expect((yield* limited("POST", `/admin/dead-letters/${webJob}/replay`)).status).toBe(202)
        expect((yield* limited("GET", "/admin/endpoints?sourceId=web")).status).toBe(200)
      }),
    30_000
  )
})
