import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { createHmac } from "node:crypto"
import * as http from "node:http"
import { gzipSync } from "node:zlib"
import * as StoreLayers from "../../src/store/Store.js"
import { StoreError } from "../../src/store/StoreError.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { withOutbox } from "../support/flakyStore.js"
import { basic } from "../support/http.js"

const writeKey = "wk_tracking_tests_1"
const secret = "tracking-secret"

const post = (
  baseUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = { authorization: basic(writeKey) }
) =>
  Effect.promise(async () => {
    const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body)
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: payload
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
  })

/** The app with one source delivering to a loopback receiver that answers 200. */
const setup = (options: { readonly dispatch?: boolean } = {}) =>
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp({ dispatch: options.dispatch ?? true })
    yield* app.relaySources.putSource({
      id: "web",
      writeKey,
      webhooks: { enabled: true, sharedSecret: secret, endpoints: [{ url: `${receiver.url}/hook` }] }
    })
    return { app, receiver }
  })

const receivedBodies = (receiver: { readonly requests: ReadonlyArray<{ readonly body: Buffer }> }) =>
  receiver.requests.map((request) => JSON.parse(request.body.toString("utf8")) as Record<string, unknown>)

describe("tracking API: authentication", () => {
  it.live("refuses a missing, unknown or malformed write key with 401 and a JSON error", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const message = { userId: "u", event: "E" }
      for (
        const headers of [{}, { authorization: basic("wrong-key") }, { authorization: "Bearer nope" }]
      ) {
        const answer = yield* post(app.baseUrl, "/v1/track", message, headers)
        expect(answer.status).toBe(401)
        expect(answer.body).toMatchObject({ success: false, code: "unauthorized" })
      }
      const wrongInBody = yield* post(app.baseUrl, "/v1/track", { ...message, writeKey: "nope" }, {})
      expect(wrongInBody.status).toBe(401)
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending + backlog.delivering).toBe(0)
    }))

  it.live("accepts the write key in the body when there is no Basic header", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const answer = yield* post(app.baseUrl, "/v1/track", { userId: "u", event: "E", writeKey }, {})
      expect(answer).toMatchObject({ status: 200, body: { success: true } })
    }))
})

describe("tracking API: limits and validation", () => {
  it.live("answers 413 for a 33 KB message and for a 501 KB body, storing nothing", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const big = yield* post(app.baseUrl, "/v1/track", {
        userId: "u",
        event: "E",
        properties: { blob: "x".repeat(33 * 1024) }
      })
      expect(big.status).toBe(413)
      expect(big.body).toMatchObject({ success: false, code: "message_too_large" })

      const messages = Array.from({ length: 40 }, (_, index) => ({
        type: "track",
        userId: `u${index}`,
        event: "E",
        properties: { blob: "y".repeat(12_500) }
      }))
      const body = JSON.stringify({ batch: messages })
      expect(body.length).toBeGreaterThan(501 * 1000)
      const huge = yield* post(app.baseUrl, "/v1/batch", body)
      expect(huge.status).toBe(413)
      expect(huge.body).toMatchObject({ success: false, code: "payload_too_large" })
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending).toBe(0)
    }))

  it.live("reads a chunked body without Content-Length, and refuses one that passes 500 KB while streaming", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      // Chunks written one by one with no Content-Length: the limit is applied while reading.
      const postChunked = (chunks: ReadonlyArray<string>) =>
        Effect.promise(() =>
          new Promise<{ status: number | undefined; body: string }>((resolve) => {
            const request = http.request(`${app.baseUrl}/v1/batch`, {
              method: "POST",
              headers: { authorization: basic(writeKey), "content-type": "application/json" }
            }, (response) => {
              let body = ""
              response.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
              response.on("end", () => resolve({ status: response.statusCode, body }))
              response.on("error", () => resolve({ status: response.statusCode, body }))
            })
            // A refusal may close the connection before the client finished writing.
            request.on("error", () => resolve({ status: undefined, body: "" }))
            const write = (index: number) => {
              if (index === chunks.length) return void request.end()
              request.write(chunks[index], () => setImmediate(() => write(index + 1)))
            }
            write(0)
          })
        )
      const message = (index: number) => JSON.stringify({ type: "track", userId: `u${index}`, event: "E" })
      const small = yield* postChunked(["{\"batch\":[", message(0), ",", message(1), "]}"])
      expect(small).toStrictEqual({ status: 200, body: "{\"success\":true}" })

      const pad = "z".repeat(100_000)
      const huge = yield* postChunked([`{"batch":[],"pad":"`, pad, pad, pad, pad, pad, pad, `"}`])
      // 413 when the answer gets out before the connection is closed; never a 200 or a 5xx.
      if (huge.status !== undefined) expect(huge.status).toBe(413)
      // Only the two messages of the small request are stored.
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending).toBe(2)
      const after = yield* post(app.baseUrl, "/v1/track", { userId: "u", event: "E" })
      expect(after.status).toBe(200)
    }))

  it.live("takes a body that starts with a UTF-8 byte order mark, plain or gzipped", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const bom = Buffer.from([0xef, 0xbb, 0xbf])
      const json = (userId: string) => Buffer.from(JSON.stringify({ batch: [{ type: "track", userId, event: "É" }] }))
      const plain = yield* post(app.baseUrl, "/v1/batch", Buffer.concat([bom, json("plain")]), {
        authorization: basic(writeKey),
        "content-type": "application/json; charset=utf-8"
      })
      expect(plain.status).toBe(200)
      const zipped = yield* post(app.baseUrl, "/v1/batch", gzipSync(Buffer.concat([bom, json("zipped")])), {
        authorization: basic(writeKey),
        "content-encoding": "gzip"
      })
      expect(zipped.status).toBe(200)
      expect((yield* app.outbox.backlog()).pending).toBe(2)
      // Anything else before the JSON is still not JSON.
      const junk = yield* post(app.baseUrl, "/v1/batch", Buffer.concat([Buffer.from("x"), json("junk")]), {
        authorization: basic(writeKey)
      })
      expect(junk.status).toBe(400)
    }))

  it.live("applies the limit to decoded bytes of a gzip body (a compression bomb is refused)", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const bomb = gzipSync(Buffer.from(JSON.stringify({ batch: [], pad: "0".repeat(5_000_000) })))
      expect(bomb.length).toBeLessThan(20_000)
      const answer = yield* post(app.baseUrl, "/v1/batch", bomb, {
        authorization: basic(writeKey),
        "content-encoding": "gzip"
      })
      expect(answer.status).toBe(413)
      const ok = gzipSync(Buffer.from(JSON.stringify({ batch: [{ type: "track", userId: "u", event: "E" }] })))
      const accepted = yield* post(app.baseUrl, "/v1/batch", ok, {
        authorization: basic(writeKey),
        "content-encoding": "gzip",
        "content-type": "application/x-www-form-urlencoded"
      })
      expect(accepted.status).toBe(200)
    }))

  it.live("answers 400 for a body that is not JSON", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const answer = yield* post(app.baseUrl, "/v1/track", "{not json")
      expect(answer.status).toBe(400)
      expect(answer.body).toStrictEqual({
        success: false,
        code: "invalid_json",
        message: "the body must be a JSON object",
        errors: [{ path: "", message: "is not valid JSON" }]
      })
    }))

  it.live("refuses a whole batch with one bad message, naming its index, and stores nothing", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const answer = yield* post(app.baseUrl, "/v1/batch", {
        batch: [
          { type: "track", userId: "u1", event: "E", messageId: "ok-1" },
          { type: "track", userId: "u2", messageId: "bad-1" },
          { type: "identify", userId: "u3", messageId: "ok-2" }
        ]
      })
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({
        success: false,
        code: "invalid_message",
        errors: [{ index: 1, path: "event", message: "is missing" }]
      })
      expect(yield* app.relayMessages.messageJobs("ok-1")).toStrictEqual([])
      expect(yield* app.relayMessages.messageJobs("ok-2")).toStrictEqual([])
    }))

  it.live("answers 400 for more than 2 500 messages in a batch", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const batch = Array.from({ length: 2501 }, () => ({ type: "track", userId: "u", event: "E" }))
      const answer = yield* post(app.baseUrl, "/v1/batch", { batch })
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({ code: "too_many_messages", errors: [{ path: "batch" }] })
    }))

  it.live("refuses a type that disagrees with the endpoint, naming type", () =>
    Effect.gen(function*() {
      const { app } = yield* setup({ dispatch: false })
      const answer = yield* post(app.baseUrl, "/v1/track", { type: "identify", userId: "u", event: "E" })
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({ errors: [{ path: "type" }] })
    }))
})

describe("tracking API: routing, dedupe and delivery", () => {
  it.live("integrations: All:false is not delivered, Webhooks:true is, lowercase webhooks does not match", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      const send = (messageId: string, integrations: Record<string, unknown>) =>
        post(app.baseUrl, "/v1/track", { userId: "u", event: "E", messageId, integrations })
      expect((yield* send("all-false", { All: false })).status).toBe(200)
      expect((yield* send("webhooks-true", { All: false, Webhooks: true })).status).toBe(200)
      expect((yield* send("lowercase", { All: false, webhooks: true })).status).toBe(200)
      expect((yield* send("webhooks-false", { Webhooks: false })).status).toBe(200)
      expect((yield* send("plain", {})).status).toBe(200)
      yield* waitUntil(() => receiver.requests.length >= 2, "two deliveries")
      yield* Effect.sleep("300 millis")
      expect(receivedBodies(receiver).map((body) => body.messageId).sort()).toStrictEqual(["plain", "webhooks-true"])
    }))

  it.live("a repeated messageId is answered 200 and delivered once", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      for (let i = 0; i < 3; i++) {
        const answer = yield* post(app.baseUrl, "/v1/track", { userId: "u", event: "E", messageId: "same-id" })
        expect(answer.status).toBe(200)
      }
      yield* post(app.baseUrl, "/v1/batch", {
        batch: [{ type: "track", userId: "u", event: "E", messageId: "same-id" }]
      })
      yield* waitUntil(() => receiver.requests.length >= 1, "a delivery")
      yield* Effect.sleep("300 millis")
      expect(receiver.requests).toHaveLength(1)
    }))

  it.live("delivers the exact signed body with the Segment fields", () =>
    Effect.gen(function*() {
      const { app, receiver } = yield* setup()
      const answer = yield* post(app.baseUrl, "/v1/batch", {
        batch: [{
          type: "track",
          userId: 42,
          event: "Order Completed",
          properties: { revenue: 39.95 },
          messageId: "m-exact",
          timestamp: "2026-11-21T09:00:00.000Z",
          _metadata: { bundled: [] }
        }],
        context: { library: { name: "analytics-node", version: "3" } }
      })
      expect(answer.status).toBe(200)
      yield* waitUntil(() => receiver.requests.length >= 1, "a delivery")
      const request = receiver.requests[0]!
      const body = JSON.parse(request.body.toString("utf8"))
      expect(body).toStrictEqual({
        version: 1,
        type: "track",
        messageId: "m-exact",
        userId: "42",
        event: "Order Completed",
        properties: { revenue: 39.95 },
        timestamp: "2026-11-21T09:00:00.000Z",
        receivedAt: body.receivedAt,
        context: { library: { name: "analytics-node", version: "3" } }
      })
      expect(body.receivedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      expect(request.headers["x-signature"]).toBe(createHmac("sha1", secret).update(request.body).digest("hex"))
      expect(request.headers["user-agent"]).toBe("hookrelay/1.0")
    }))
})

describe("tracking API: clock-skew correction", () => {
  it.effect("stamps receivedAt from the server clock and corrects the device's skew", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const { app, receiver } = yield* setup()
      const answer = yield* post(app.baseUrl, "/v1/track", {
        userId: "u",
        event: "E",
        messageId: "skewed",
        timestamp: "2026-11-21T13:00:00.000Z",
        sentAt: "2026-11-21T13:00:10.000Z"
      })
      expect(answer.status).toBe(200)
      yield* waitUntil(() => receiver.requests.length >= 1, "a delivery")
      expect(receivedBodies(receiver)[0]).toMatchObject({
        receivedAt: "2026-11-21T12:00:00.000Z",
        timestamp: "2026-11-21T11:59:50.000Z",
        originalTimestamp: "2026-11-21T13:00:00.000Z",
        sentAt: "2026-11-21T13:00:10.000Z"
      })
    }))
})

describe("tracking API: commit before answer", () => {
  it.live("answers 503 and delivers nothing when the store cannot commit", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const failingEnqueue = withOutbox(StoreLayers.layerSqlite({ directory }), (outbox) => ({
        ...outbox,
        enqueue: () => Effect.fail(new StoreError({ operation: "enqueue", cause: new Error("disk full") }))
      }))
      const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
      const app = yield* startApp({ store: failingEnqueue })
      yield* app.relaySources.putSource({
        id: "web",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: receiver.url }] }
      })
      const answer = yield* post(app.baseUrl, "/v1/track", { userId: "u", event: "E" })
      expect(answer.status).toBe(503)
      expect(answer.headers.get("retry-after")).toBe("5")
      expect(answer.body).toMatchObject({ success: false, code: "store_unavailable" })
      yield* Effect.sleep("300 millis")
      expect(receiver.requests).toHaveLength(0)
    }))
})
