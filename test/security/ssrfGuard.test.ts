import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { deliver } from "../../src/delivery/Deliver.js"
import { EndpointState } from "../../src/delivery/DeliveryResult.js"
import * as Transport from "../../src/delivery/Transport.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { recorder } from "../delivery/support.js"
import { startApp } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import {
  alwaysRefused,
  body,
  cases,
  egress,
  guardedTransport,
  hint,
  job,
  loopback,
  publicAddress,
  scriptedDns,
  startListener
} from "./ssrfSupport.js"

/**
 * The SSRF guard at delivery (REFERENCE §8): refused addresses never get a connection and end as one permanent attempt that
 * says why; with the escape hatch the loopback and private ones are delivered, the other refused ranges are not.
 */

/** What `deliver` ends with for a URL whose address the guard refused: retired after its one permanent attempt. */
const blockedOnce = (url: string, reason: string) =>
  EndpointState.Retired({
    url,
    attempts: 1,
    why: "permanent",
    lastOutcome: AttemptOutcome.Permanent({ reason, code: EgressPolicy.blockedAddressCode })
  })

describe("SSRF guard at delivery: refused without the escape hatch", () => {
  it.live("refuses every internal address before connecting: one permanent attempt that says why, no retry", () =>
    Effect.gen(function*() {
      const listener = yield* startListener
      for (const { host, reason } of cases) {
        const dns = scriptedDns()
        const url = `http://${host}:${listener.port}/hook`
        const { records, sink } = recorder()
        const error = yield* Effect.gen(function*() {
          if (host === "rebind.test") {
            // The save-time check saw the public address and let the URL through.
            const policy = yield* EgressPolicy.EgressPolicy
            yield* policy.checkUrl(url)
          }
          return yield* deliver(job(url), { recordAttempt: sink }).pipe(Effect.flip)
        }).pipe(Effect.provide(guardedTransport(false, dns.layer)))

        const expected = `blocked_address: ${reason}${hint}`
        expect(error.endpoints, url).toStrictEqual([blockedOnce(url, expected)])
        expect(records, url).toHaveLength(1)
        expect(records[0], url).toMatchObject({ url, attempt: 1, outcome: "permanent", error: expected })
        expect(records[0]!.statusCode).toBeNull()
        if (host === "rebind.test") expect(dns.lookups.get(host)).toBe(2)
      }
      expect(listener.connections).toBe(0)
      expect(listener.paths).toStrictEqual([])
    }))

  it.live("refuses localhost through the system resolver", () =>
    Effect.gen(function*() {
      const listener = yield* startListener
      const transport = yield* Transport.make({ allowPrivateNetworks: false })
      const error = yield* transport.post({
        ...Transport.requestTarget(`http://localhost:${listener.port}/hook`),
        headers: [],
        body
      }).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "TransportError", code: EgressPolicy.blockedAddressCode })
      expect(error.message).toMatch(/^blocked_address: localhost resolves to (127\.0\.0\.1|::1), which is loopback/)
      expect(listener.connections).toBe(0)
    }))

  it.live("the refused path leaves the transport working: a public-looking name that fails DNS stays retryable", () =>
    Effect.gen(function*() {
      const dns = scriptedDns()
      const { records, sink } = recorder()
      const fiber = yield* deliver(job("http://nowhere.test/hook"), { recordAttempt: sink }).pipe(
        Effect.provide(guardedTransport(false, dns.layer)),
        Effect.forkChild
      )
      yield* pollUntil(Effect.sync(() => records.length), (n) => n >= 1, "the first attempt is recorded")
      expect(records[0]).toMatchObject({ outcome: "retryable" })
      expect(records[0]!.error).toMatch(/^DNS lookup failed \(ENOTFOUND\): /)
      yield* Fiber.interrupt(fiber)
    }))
})

describe("SSRF guard at delivery: allowed with HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true", () => {
  it.live("delivers the loopback forms to the real listener", () =>
    Effect.gen(function*() {
      const listener = yield* startListener
      const reaching = cases.filter((entry) => entry.reachesListener)
      for (const [index, { host }] of reaching.entries()) {
        const dns = scriptedDns()
        const url = `http://${host}:${listener.port}/hook/${index}`
        const result = yield* Effect.gen(function*() {
          // rebind.test answers a public address first (what the settings were saved with), loopback afterwards.
          if (host === "rebind.test") yield* (yield* EgressPolicy.EgressPolicy).resolve(host)
          return yield* deliver(job(url))
        }).pipe(Effect.provide(guardedTransport(true, dns.layer)))
        expect(result, url).toMatchObject({ _tag: "Delivered", url, status: 200, attempts: 1 })
      }
      expect(listener.paths).toStrictEqual(reaching.map((_, index) => `/hook/${index}`))
    }))

  it.effect("lets every refused address of the table through the policy, resolved names included", () =>
    Effect.gen(function*() {
      for (const { host } of cases) {
        const policy = yield* EgressPolicy.EgressPolicy
        const bare = host.replace(/^\[|\]$/g, "")
        expect(policy.checkLiteral(bare), host).toBeUndefined()
        yield* policy.checkUrl(`http://${host}/`)
      }
      const policy = yield* EgressPolicy.EgressPolicy
      expect(yield* policy.resolve("mixed.test")).toStrictEqual([publicAddress, loopback])
    }).pipe(Effect.provide(egress(true, scriptedDns().layer))))
})

describe("SSRF guard at delivery: ranges the escape hatch does not open", () => {
  it.live("refuses documentation, relay, Teredo and multicast addresses with and without it: one permanent attempt", () =>
    Effect.gen(function*() {
      for (const allowPrivateNetworks of [false, true]) {
        for (const { host, reason } of alwaysRefused) {
          const url = `http://${host}:9000/hook`
          const { records, sink } = recorder()
          const error = yield* deliver(job(url), { recordAttempt: sink }).pipe(
            Effect.flip,
            Effect.provide(guardedTransport(allowPrivateNetworks, scriptedDns().layer))
          )
          const expected = `blocked_address: ${reason} (always refused)`
          expect(error.endpoints, url).toStrictEqual([blockedOnce(url, expected)])
          expect(records, url).toMatchObject([{ url, attempt: 1, outcome: "permanent", error: expected }])
        }
      }
    }))
})

describe("SSRF guard at delivery, through the engine", () => {
  it.live("DNS rebinding: saved while public, refused when delivering; nothing reaches the listener", () =>
    Effect.gen(function*() {
      const listener = yield* startListener
      const dns = scriptedDns()
      const app = yield* startApp({ egress: egress(false, dns.layer) })
      const put = yield* call(app.baseUrl, "PUT", "/admin/sources/shop", {
        body: {
          writeKey: "wk_shop",
          webhooks: { enabled: true, endpoints: [{ url: `http://rebind.test:${listener.port}/hook` }] }
        }
      })
      expect(put.status).toBe(200)
      expect(dns.lookups.get("rebind.test")).toBe(1)

      expect(yield* track(app.baseUrl, "wk_shop", { userId: "u", event: "E", messageId: "rebound-1" })).toBe(200)
      const [dead] = yield* pollUntil(
        app.relayMessages.messageJobs("rebound-1"),
        (jobs) => jobs[0]?.status === "dead",
        "the rebound job is dead"
      )
      expect(dead!.attemptCount).toBe(1)
      expect(dead!.attempts).toHaveLength(1)
      expect(dead!.attempts[0]).toMatchObject({
        outcome: "permanent",
        error: `blocked_address: rebind.test resolves to 127.0.0.1, which is loopback${hint}`
      })
      expect(dead!.lastError).toContain("blocked_address: rebind.test resolves to 127.0.0.1")
      expect(listener.connections).toBe(0)
    }))
})
