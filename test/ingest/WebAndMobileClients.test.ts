import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import { gzipSync } from "node:zlib"
import { browserSettings } from "../../src/ingest/BrowserSettings.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { adminToken, startApp } from "../support/app.js"
import { basic } from "../support/http.js"

/**
 * The requests of Segment's web and mobile libraries, as they send them: analytics.js posts each message to
 * `/v1/<first letter of its type>` as `text/plain` with the write key in the body (and as Basic auth), from another
 * origin; its batching mode and the mobile libraries post gzipped `text/plain` batches to `/v1/b` with Basic auth, in
 * chunks.
 * The real analytics.js in Chromium: test/e2e/BrowserClient.test.ts.
 */

const writeKey = "wk_web_mobile_tests_1"
const pageOrigin = "https://shop.example.com"

const setup = Effect.gen(function*() {
  const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
  const app = yield* startApp({ dispatch: true, admin: true })
  yield* app.relaySources.putSource({
    id: "web",
    writeKey,
    webhooks: { enabled: true, sharedSecret: "web-mobile-secret", endpoints: [{ url: `${receiver.url}/hook` }] }
  })
  return { app, receiver }
})

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

const send = (url: string, init: RequestInit) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(url, init)
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

/** A page's simple cross-origin POST: `text/plain`, the write key in the body only, so no preflight. */
const fromPage = (baseUrl: string, path: string, body: Record<string, unknown>) =>
  send(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "text/plain", origin: pageOrigin },
    body: JSON.stringify(body)
  })

const deliveredBodies = (receiver: { readonly requests: ReadonlyArray<{ readonly body: Buffer }> }) =>
  receiver.requests.map((request) => JSON.parse(request.body.toString("utf8")) as Record<string, unknown>)

describe("tracking API: Segment's short paths", () => {
  it.live("/v1/i, /v1/t, /v1/p, /v1/s, /v1/g and /v1/a take one message of their type each", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup
      const messages = [
        ["/v1/i", { type: "identify", userId: "u1", traits: { plan: "pro" } }],
        ["/v1/t", { type: "track", userId: "u1", event: "Signed Up" }],
        ["/v1/p", { type: "page", anonymousId: "a1", name: "Home" }],
        ["/v1/s", { type: "screen", userId: "u1", name: "Settings" }],
        ["/v1/g", { type: "group", userId: "u1", groupId: "g1" }],
        ["/v1/a", { type: "alias", userId: "u1", previousId: "a1" }]
      ] as const
      for (const [path, message] of messages) {
        const answer = yield* fromPage(app.baseUrl, path, { ...message, messageId: `short-${path}`, writeKey })
        expect({ path, status: answer.status, text: answer.text }).toStrictEqual({
          path,
          status: 200,
          text: "{\"success\":true}"
        })
      }
      yield* waitUntil(() => receiver.requests.length >= messages.length, "six deliveries")
      const byId = new Map(deliveredBodies(receiver).map((body) => [body.messageId, body]))
      for (const [path, message] of messages) {
        // The delivered alias names its ids as REFERENCE §3 does ("Previous ID", "User ID").
        const expected = message.type === "alias"
          ? { type: "alias", "Previous ID": message.previousId, "User ID": message.userId }
          : message
        expect(byId.get(`short-${path}`)).toMatchObject(expected)
      }
    }))

  it.live("a short path checks the type as its long one does", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      const answer = yield* fromPage(app.baseUrl, "/v1/t", { type: "identify", userId: "u", event: "E", writeKey })
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.text)).toMatchObject({ success: false, errors: [{ path: "type" }] })
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending + backlog.delivering).toBe(0)
    }))

  it.live("/v1/b takes a mobile library's batch: gzipped text/plain, chunked, Basic auth", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup
      const batch = Array.from({ length: 20 }, (_, index) => ({
        type: index % 2 === 0 ? "track" : "screen",
        userId: "device-user",
        event: "Button Tapped",
        name: "Home",
        messageId: `mobile-${index}`,
        context: { library: { name: "analytics-kotlin", version: "1.19.1" } }
      }))
      const gzipped = gzipSync(Buffer.from(JSON.stringify({ batch, sentAt: new Date().toISOString(), writeKey })))
      const status = yield* Effect.promise(() =>
        new Promise<number | undefined>((resolve) => {
          const request = http.request(`${app.baseUrl}/v1/b`, {
            method: "POST",
            headers: { authorization: basic(writeKey), "content-type": "text/plain", "content-encoding": "gzip" }
          }, (response) => {
            response.resume()
            response.on("end", () => resolve(response.statusCode))
          })
          request.on("error", () => resolve(undefined))
          // No Content-Length: the body goes out in chunks, as `setChunkedStreamingMode(0)` sends it.
          const half = Math.floor(gzipped.length / 2)
          request.write(gzipped.subarray(0, half), () => request.end(gzipped.subarray(half)))
        })
      )
      expect(status).toBe(200)
      yield* waitUntil(() => receiver.requests.length >= batch.length, "the whole batch delivered")
      expect(deliveredBodies(receiver).map((body) => body.messageId).sort()).toStrictEqual(
        batch.map((message) => message.messageId).sort()
      )
    }))
})

describe("tracking API: cross-origin requests from web pages", () => {
  it.live("every answer of the tracking API is readable from another origin, refusals included", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      const accepted = yield* fromPage(app.baseUrl, "/v1/t", { userId: "u", event: "E", writeKey })
      const unauthorized = yield* fromPage(app.baseUrl, "/v1/track", { userId: "u", event: "E", writeKey: "nope" })
      const invalid = yield* fromPage(app.baseUrl, "/v1/t", { userId: "u", writeKey })
      const unknownPath = yield* fromPage(app.baseUrl, "/v1/nope", { writeKey })
      expect([accepted.status, unauthorized.status, invalid.status, unknownPath.status]).toStrictEqual([
        200,
        401,
        400,
        404
      ])
      for (const answer of [accepted, unauthorized, invalid, unknownPath]) {
        expect(answer.headers.get("access-control-allow-origin")).toBe("*")
        expect(answer.headers.get("access-control-expose-headers")).toBe("retry-after")
      }
    }))

  it.live("answers a preflight for JSON with Basic auth, which a browser then sends", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup
      const preflight = yield* send(`${app.baseUrl}/v1/track`, {
        method: "OPTIONS",
        headers: {
          origin: pageOrigin,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization,content-type"
        }
      })
      expect(preflight.status).toBe(204)
      expect(preflight.text).toBe("")
      expect(Object.fromEntries(preflight.headers)).toMatchObject({
        "access-control-allow-origin": "*",
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": "authorization,content-type",
        "access-control-max-age": "86400"
      })
      // A preflight stores nothing and authenticates nothing: it carries no body and no credentials.
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending + backlog.delivering).toBe(0)

      const answer = yield* send(`${app.baseUrl}/v1/track`, {
        method: "POST",
        headers: { origin: pageOrigin, authorization: basic(writeKey), "content-type": "application/json" },
        body: JSON.stringify({ userId: "u", event: "After Preflight", messageId: "after-preflight" })
      })
      expect(answer.status).toBe(200)
      yield* waitUntil(() => receiver.requests.length >= 1, "the delivery")
      expect(deliveredBodies(receiver)[0]).toMatchObject({ messageId: "after-preflight", event: "After Preflight" })
    }))

  it.live("the admin API, metrics and health stay same-origin", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      for (const path of ["/admin/sources", "/metrics", "/healthz"]) {
        const preflight = yield* send(`${app.baseUrl}${path}`, {
          method: "OPTIONS",
          headers: { origin: pageOrigin, "access-control-request-method": "GET" }
        })
        expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
        const answer = yield* send(`${app.baseUrl}${path}`, {
          headers: { origin: pageOrigin, authorization: `Bearer ${adminToken}` }
        })
        expect({ path, status: answer.status }).toStrictEqual({ path, status: 200 })
        expect(answer.headers.get("access-control-allow-origin")).toBeNull()
      }
    }))
})

describe("analytics.js settings: GET /v1/projects/:writeKey/settings", () => {
  it.live("point the library back at the host and scheme the browser used, readable from any origin", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      const direct = yield* send(`${app.baseUrl}/v1/projects/${writeKey}/settings`, { headers: { origin: pageOrigin } })
      expect(direct.status).toBe(200)
      expect(JSON.parse(direct.text)).toStrictEqual(
        browserSettings(writeKey, { host: new URL(app.baseUrl).host, protocol: "http" })
      )
      expect(direct.headers.get("access-control-allow-origin")).toBe("*")
      expect(direct.headers.get("cache-control")).toBe("private, max-age=60")

      // Behind a TLS-terminating proxy: its forwarded host and scheme.
      const proxied = yield* send(`${app.baseUrl}/v1/projects/${writeKey}/settings`, {
        headers: { "x-forwarded-host": "track.shop.example.com", "x-forwarded-proto": "https" }
      })
      expect(JSON.parse(proxied.text)).toMatchObject({
        integrations: { "Segment.io": { apiKey: writeKey, apiHost: "track.shop.example.com/v1", protocol: "https" } },
        metrics: { sampleRate: 0 }
      })
    }))

  it.live("answer 404 naming the write key for an unknown one", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      const answer = yield* send(`${app.baseUrl}/v1/projects/not-a-key/settings`, { headers: { origin: pageOrigin } })
      expect(answer.status).toBe(404)
      expect(JSON.parse(answer.text)).toStrictEqual({
        success: false,
        code: "not_found",
        message: "unknown write key",
        errors: [{ path: "writeKey", message: "is not a known write key" }]
      })
      expect(answer.headers.get("access-control-allow-origin")).toBe("*")
    }))
})
