import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { startApp } from "../support/app.js"
import { startWithGoneEndpoint } from "../support/goneEndpoint.js"
import { call, pollUntil, track } from "../support/http.js"

/** Endpoint health, enable/disable and bulk recovery through the admin API, against the whole server. */

const writeKey = "wk_endpoint_tests_0123456789abcdef"

describe("admin API: endpoints and bulk recovery", () => {
  it.live("a 410 disables the URL; its jobs die \"endpoint disabled\"; enabling resets; replay recovers them", () =>
    Effect.gen(function*() {
      const { app, receiver, setStatus, url } = yield* startWithGoneEndpoint(writeKey)
      const endpoints = () => call(app.baseUrl, "GET", "/admin/endpoints?sourceId=web")

      expect(yield* track(app.baseUrl, writeKey, { type: "track", event: "A", userId: "u" })).toBe(200)
      const disabled = yield* pollUntil(
        endpoints(),
        (answer) =>
          answer.body?.endpoints?.[0]?.disabledReason !== null && answer.body?.endpoints?.[0]?.lastDay.attempts === 1,
        "disabled, its attempt written"
      )
      expect(disabled.body.endpoints[0]).toMatchObject({
        sourceId: "web",
        url,
        index: 0,
        state: "disabled",
        disabledReason: "HTTP 410 Gone",
        lastFailure: { reason: "HTTP 410" },
        lastDay: { attempts: 1, successRate: 0 }
      })

      // The gauges, labelled by source and URL index: 3 = disabled.
      yield* pollUntil(
        Effect.promise(() => fetch(`${app.baseUrl}/metrics`).then((response) => response.text())),
        (text) => /hookrelay_endpoint_circuit_state\{[^}]*source="web"[^}]*\} 3/.test(text),
        "the circuit gauge shows the URL disabled"
      )

      expect(yield* track(app.baseUrl, writeKey, { type: "track", event: "B", userId: "u" })).toBe(200)
      const dead = yield* pollUntil(
        app.relayMessages.deadLetters({ sourceId: "web", limit: 10 }),
        (jobs) => jobs.length === 2,
        "both jobs dead"
      )
      expect(dead.some((job) => job.lastError?.includes("endpoint disabled"))).toBe(true)
      expect(receiver.requests.length).toBe(1)

      setStatus(200)
      const enabled = yield* call(app.baseUrl, "POST", "/admin/endpoints/enable", { body: { url } })
      expect(enabled).toMatchObject({ status: 200, body: { url, state: "enabled", changed: true } })
      const fresh = yield* endpoints()
      expect(fresh.body.endpoints[0]).toMatchObject({ state: "healthy", consecutiveFailures: 0, disabledReason: null })

      const filter = { sourceId: "web", url }
      const dry = yield* call(app.baseUrl, "POST", "/admin/dead-letters/replay", { body: { ...filter, dryRun: true } })
      expect(dry).toMatchObject({ status: 200, body: { dryRun: true, count: 2 } })
      const other = yield* call(app.baseUrl, "POST", "/admin/dead-letters/replay", {
        body: { sourceId: "web", url: "https://other.example/hook", dryRun: true }
      })
      expect(other.body).toStrictEqual({ dryRun: true, count: 0 })
      const replay = yield* call(app.baseUrl, "POST", "/admin/dead-letters/replay", { body: filter })
      expect(replay.body).toStrictEqual({ dryRun: false, count: 2 })
      yield* pollUntil(Effect.sync(() => receiver.requests.length), (n) => n === 3, "the replays delivered")
    }))

  it.live("bad input is a 400 naming the field; an unknown source a 404", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const list = yield* call(app.baseUrl, "GET", "/admin/endpoints")
      expect(list).toMatchObject({ status: 400, body: { errors: [{ path: "sourceId" }] } })
      const replay = yield* call(app.baseUrl, "POST", "/admin/dead-letters/purge", { body: { since: "yesterday" } })
      expect(replay.status).toBe(400)
      expect(replay.body.errors.map((issue: { path: string }) => issue.path)).toContain("sourceId")
      const enable = yield* call(app.baseUrl, "POST", "/admin/endpoints/enable", { body: { url: "" } })
      expect(enable).toMatchObject({ status: 400, body: { errors: [{ path: "url" }] } })
      const unknown = yield* call(app.baseUrl, "GET", "/admin/endpoints?sourceId=nope")
      expect(unknown.status).toBe(404)
    }))

  it.live("a body over 256 KB is a 413 on every admin route that takes one, and nothing changes", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const huge = JSON.stringify({ url: `https://hooks.example.com/${"x".repeat(300 * 1024)}` })
      for (
        const [method, path] of [
          ["POST", "/admin/endpoints/enable"],
          ["POST", "/admin/endpoints/disable"],
          ["POST", "/admin/dead-letters/replay"],
          ["POST", "/admin/dead-letters/purge"],
          ["PUT", "/admin/sources/big"],
          ["POST", "/admin/sources/big/secrets/rotate"]
        ] as const
      ) {
        const answer = yield* call(app.baseUrl, method, path, { body: huge })
        expect(answer, `${method} ${path}`).toMatchObject({ status: 413, body: { code: "payload_too_large" } })
      }
      // Past what is read at all (8 MB), the connection is given up on: a 413 if it gets out first, else a reset.
      const endless = yield* Effect.exit(call(app.baseUrl, "POST", "/admin/endpoints/enable", {
        body: JSON.stringify({ url: "x".repeat(9 * 1024 * 1024) })
      }))
      if (Exit.isSuccess(endless)) expect(endless.value.status).toBe(413)
      else expect(Cause.pretty(endless.cause)).toContain("fetch failed")
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/big")).status).toBe(404)
      // The server goes on answering.
      const small = yield* call(app.baseUrl, "POST", "/admin/endpoints/disable", {
        body: { url: "https://x.example/h" }
      })
      expect(small.status).toBe(200)
    }))
})
