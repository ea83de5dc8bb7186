import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as StoreLayers from "../../src/store/Store.js"
import { captureLogs } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { flakyStore } from "../support/flakyStore.js"
import { basic, call } from "../support/http.js"

/** REFERENCE §2/§7: a store that cannot answer is a 503 with Retry-After everywhere, never a 401 for a valid key. */

const post = (baseUrl: string, path: string, body: unknown, authorization?: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(authorization !== undefined && { authorization }) },
      body: JSON.stringify(body)
    })
    const text = await response.text()
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: JSON.parse(text) }
  })

const get = (baseUrl: string, path: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}${path}`)
    const text = await response.text()
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: JSON.parse(text) }
  })

const key = "wk_outage_tests_0123456789abcdef"
const source = { writeKey: key, webhooks: { enabled: true, endpoints: [{ url: "https://hooks.example.com/in" }] } }

const startFlaky = Effect.gen(function*() {
  const directory = yield* tempDirectory
  const flaky = flakyStore(StoreLayers.layerSqlite({ directory }))
  const app = yield* startApp({ dispatch: false, store: flaky.layer })
  return { app, outage: flaky.outage }
})

describe("a store that cannot answer", () => {
  it.live("is 503 store_unavailable with Retry-After on the tracking API, the settings and the admin API", () =>
    Effect.gen(function*() {
      const { app, outage } = yield* startFlaky
      // Never looked up before the outage: no cached entry to fall back on, as after the cache's entry expired.
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source })
      expect(put.status).toBe(200)
      outage.now = "unreachable"

      const message = { type: "track", event: "Signed Up", userId: "u1", messageId: "m-1" }
      const answers = [
        yield* post(app.baseUrl, "/v1/track", message, basic(key)),
        yield* post(app.baseUrl, "/v1/track", { ...message, writeKey: key }),
        yield* post(app.baseUrl, "/v1/batch", { batch: [message] }, basic(key)),
        // A key that may or may not exist cannot be told from a valid one while the store is away.
        yield* post(app.baseUrl, "/v1/track", message, basic("wk_unknown_0123456789abcdef")),
        yield* get(app.baseUrl, `/v1/projects/${key}/settings`)
      ]
      for (const answer of answers) {
        expect(answer.status).toBe(503)
        expect(answer.body.code).toBe("store_unavailable")
        expect(Number(answer.retryAfter)).toBeGreaterThan(0)
      }
      const admin = yield* call(app.baseUrl, "GET", "/admin/sources")
      expect(admin.status).toBe(503)
      expect(admin.body.code).toBe("store_unavailable")
      expect(Number(admin.headers.get("retry-after"))).toBeGreaterThan(0)

      const notReady = yield* get(app.baseUrl, "/readyz")
      expect(notReady.status).toBe(503)
      expect(notReady.body.reason).toBe("store_unavailable")
      expect(notReady.body.message).toContain("ECONNREFUSED")
      expect((yield* get(app.baseUrl, "/healthz")).status).toBe(200)

      // Back: the same server goes on, no restart; the message refused during the outage is accepted now.
      outage.now = "none"
      expect((yield* get(app.baseUrl, "/readyz")).body).toStrictEqual({ status: "ready" })
      expect((yield* post(app.baseUrl, "/v1/track", message, basic(key))).status).toBe(200)
      expect((yield* post(app.baseUrl, "/v1/track", message, basic("wk_unknown_0123456789abcdef"))).status).toBe(401)
      // One job: the refused attempts stored nothing.
      const jobs = yield* call(app.baseUrl, "GET", "/admin/messages/m-1")
      expect(jobs.body.jobs).toHaveLength(1)
    }))

  it.live("a full disk refuses ingest with 503 and /readyz says so until a write succeeds again", () =>
    Effect.gen(function*() {
      const { app, outage } = yield* startFlaky
      yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source })
      outage.now = "full"
      const message = { type: "track", event: "E", userId: "u1" }
      const refused = yield* post(app.baseUrl, "/v1/track", message, basic(key))
      expect(refused.status).toBe(503)
      expect(refused.body.code).toBe("store_unavailable")
      // Reads still work on a full disk; readiness stays down until a write shows room again.
      const full = yield* get(app.baseUrl, "/readyz")
      expect(full.status).toBe(503)
      expect(full.body.reason).toBe("store_full")
      outage.now = "none"
      expect((yield* get(app.baseUrl, "/readyz")).status).toBe(503)
      expect((yield* post(app.baseUrl, "/v1/track", message, basic(key))).status).toBe(200)
      expect((yield* get(app.baseUrl, "/readyz")).status).toBe(200)
    }))

  it.live("an outage is logged once, and its end once, however many requests it refuses", () =>
    Effect.gen(function*() {
      const logs = captureLogs()
      const { app, outage } = yield* Effect.provide(startFlaky, logs.layer)
      yield* call(app.baseUrl, "PUT", "/admin/sources/web", { body: source })
      outage.now = "unreachable"
      for (let index = 0; index < 20; index += 1) {
        const answer = yield* post(app.baseUrl, "/v1/track", { type: "track", event: "E", userId: "u" }, basic(key))
        expect(answer.status).toBe(503)
      }
      outage.now = "none"
      expect((yield* get(app.baseUrl, "/readyz")).status).toBe(200)
      const store = logs.lines.filter((line) => /store/i.test(line.message))
      expect(store.map((line) => line.level)).toStrictEqual(["ERROR", "INFO"])
      expect(store[0]!.message).toContain("unavailable")
      expect(store[1]!.message).toContain("available again")
    }))
})
