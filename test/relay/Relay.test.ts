import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { InvalidMessages, MessageTooLarge, TooManyMessages, UnknownSource } from "../../src/domain/IngestErrors.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { basic } from "../support/http.js"

const writeKey = "wk_relay_tests_01"

const setup = Effect.gen(function*() {
  const receiver = yield* startServer((_request, response) => response.writeHead(200).end())
  const app = yield* startApp()
  yield* app.relaySources.putSource({
    id: "lib",
    writeKey,
    webhooks: { enabled: true, sharedSecret: "lib-secret", endpoints: [{ url: `${receiver.url}/hook` }] }
  })
  return { app, receiver }
})

describe("Relay.ingest (the library door)", () => {
  it.live("refuses invalid input with the HTTP API's typed errors and commits nothing", () =>
    Effect.gen(function*() {
      const { app } = yield* setup
      const invalid = yield* Effect.flip(app.relay.ingest("lib", [
        { type: "track", userId: "u", event: "E", messageId: "lib-ok" },
        { type: "track", userId: "u", messageId: "lib-bad" }
      ]))
      expect(invalid).toStrictEqual(
        new InvalidMessages({ errors: [{ index: 1, path: "event", message: "is missing" }] })
      )
      const big = { type: "track", userId: "u", event: "E", properties: { blob: "x".repeat(33 * 1024) } }
      expect(yield* Effect.flip(app.relay.ingest("lib", [big]))).toBeInstanceOf(MessageTooLarge)
      const many = Array.from({ length: 2501 }, () => ({ type: "track", userId: "u", event: "E" }))
      expect(yield* Effect.flip(app.relay.ingest("lib", many))).toStrictEqual(
        new TooManyMessages({ count: 2501, limit: 2500 })
      )
      expect(yield* Effect.flip(app.relay.ingest("nope", []))).toStrictEqual(new UnknownSource({ sourceId: "nope" }))
      expect(yield* app.relayMessages.messageJobs("lib-ok")).toStrictEqual([])
      const backlog = yield* app.outbox.backlog()
      expect(backlog.pending + backlog.delivering + backlog.delivered).toBe(0)
    }))

  it.effect("delivers byte-identical bodies for the same input through HTTP and through Relay.ingest", () =>
    Effect.gen(function*() {
      // A fixed server clock: both doors stamp the same receivedAt.
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const { app, receiver } = yield* setup
      const message = (messageId: string) => ({
        type: "page",
        userId: 7,
        anonymousId: "anon-7",
        name: "Pricing",
        properties: { path: "/pricing", title: "Pricing", ünïcode: "✓" },
        context: { ip: "203.0.113.7", page: { url: "https://example.com/pricing" } },
        timestamp: "2026-11-21T12:59:50+01:00",
        sentAt: "2026-11-21T13:00:00+01:00",
        messageId,
        _metadata: { bundled: [] }
      })
      const response = yield* Effect.promise(() =>
        fetch(`${app.baseUrl}/v1/batch`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basic(writeKey) },
          body: JSON.stringify({ batch: [message("same-input")] })
        })
      )
      expect(response.status).toBe(200)
      yield* waitUntil(() => receiver.requests.length === 1, "the HTTP message delivered")
      // Deduplication would drop a second "same-input"; a second source gives the library door its own id space.
      yield* app.relaySources.putSource({
        id: "lib-2",
        writeKey: "wk_relay_tests_02",
        webhooks: { enabled: true, sharedSecret: "lib-secret", endpoints: [{ url: `${receiver.url}/hook` }] }
      })
      yield* app.relay.ingest("lib-2", [message("same-input")])
      yield* waitUntil(() => receiver.requests.length === 2, "the library message delivered")
      const [viaHttp, viaLibrary] = receiver.requests
      expect(viaLibrary!.body.equals(viaHttp!.body)).toBe(true)
      expect(viaLibrary!.headers["x-signature"]).toBe(viaHttp!.headers["x-signature"])
    }))
})
