import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import type { Scope } from "effect"
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { InvalidConfigFile, provision } from "../../src/config/Provisioning.js"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { deliver } from "../../src/delivery/Deliver.js"
import type { DeliveryJob } from "../../src/delivery/Deliver.js"
import { EndpointState } from "../../src/delivery/DeliveryResult.js"
import * as Transport from "../../src/delivery/Transport.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { type ResolvedAddress, ResolveError } from "../../src/network/Resolver.js"
import * as Resolver from "../../src/network/Resolver.js"
import { Relay } from "../../src/relay/Relay.js"
import { recorder, repoRoot } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { call, pollUntil, track } from "../support/http.js"
import { freePort } from "../support/serverProcess.js"

/**
 * The SSRF guard end to end (SPEC §8): refused addresses never get a connection and end as one permanent attempt that
 * says why; with the escape hatch the same URLs are delivered. A real listener on `::` (every loopback form reaches it:
 * 127.0.0.1, ::1, ::ffff:127.0.0.1 and 0.0.0.0) counts the connections it gets.
 */

interface Listener {
  readonly port: number
  connections: number
  readonly paths: Array<string>
}

const startListener: Effect.Effect<Listener, never, Scope.Scope> = Effect.acquireRelease(
  Effect.callback<{ server: http.Server; listener: Listener }>((resume) => {
    const listener: Listener = { port: 0, connections: 0, paths: [] }
    const server = http.createServer((request, response) => {
      listener.paths.push(request.url ?? "")
      request.resume()
      request.on("end", () => response.writeHead(200).end("ok"))
    })
    server.on("connection", () => listener.connections++)
    server.listen(0, "::", () => {
      Object.assign(listener, { port: (server.address() as AddressInfo).port })
      resume(Effect.succeed({ server, listener }))
    })
  }),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ listener }) => listener))

const publicAddress: ResolvedAddress = { address: "93.184.216.34", family: 4 }
const loopback: ResolvedAddress = { address: "127.0.0.1", family: 4 }

/**
 * A scripted DNS: `rebind.test` answers a public address the first time it is asked and loopback afterwards;
 * `mixed.test` answers a public and a loopback address at once; `loopback.test` answers loopback; anything else does
 * not resolve. `lookups` counts the questions per name.
 */
const scriptedDns = () => {
  const lookups = new Map<string, number>()
  const layer = Resolver.layerTest((hostname) => {
    const count = (lookups.get(hostname) ?? 0) + 1
    lookups.set(hostname, count)
    switch (hostname) {
      case "rebind.test":
        return Effect.succeed(count === 1 ? [publicAddress] : [loopback])
      case "mixed.test":
        return Effect.succeed([publicAddress, loopback])
      case "loopback.test":
        return Effect.succeed([loopback, { address: "::1", family: 6 }])
      default:
        return Effect.fail(
          new ResolveError({ hostname, code: "ENOTFOUND", message: `getaddrinfo ENOTFOUND ${hostname}` })
        )
    }
  })
  return { lookups, layer }
}

const egress = (allowPrivateNetworks: boolean, resolver: Layer.Layer<Resolver.Resolver>) =>
  EgressPolicy.layerWithResolver({ allowPrivateNetworks }).pipe(Layer.provide(resolver))

const guardedTransport = (allowPrivateNetworks: boolean, resolver: Layer.Layer<Resolver.Resolver>) =>
  Transport.layerWithPolicy().pipe(Layer.provideMerge(egress(allowPrivateNetworks, resolver)))

const body = new TextEncoder().encode(`{"version":1,"type":"track","messageId":"m-1","event":"E","context":{}}`)

const job = (url: string): DeliveryJob => ({
  jobId: "job-1",
  messageId: "m-1",
  body,
  settings: { sharedSecret: "s3cret", endpoints: [{ url }] }
})

interface Case {
  /** The URL's host (with brackets for IPv6), the port is the listener's. */
  readonly host: string
  /** The refusal, as the attempt record gives it. */
  readonly reason: string
  /** A loopback form: with the escape hatch the real listener gets the request. */
  readonly reachesListener: boolean
}

const cases: ReadonlyArray<Case> = [
  { host: "127.0.0.1", reason: "127.0.0.1 is loopback", reachesListener: true },
  { host: "10.0.0.1", reason: "10.0.0.1 is private", reachesListener: false },
  { host: "172.16.0.1", reason: "172.16.0.1 is private", reachesListener: false },
  { host: "192.168.1.1", reason: "192.168.1.1 is private", reachesListener: false },
  { host: "100.64.0.1", reason: "100.64.0.1 is carrier-grade NAT", reachesListener: false },
  { host: "169.254.169.254", reason: "169.254.169.254 is link-local", reachesListener: false },
  { host: "[::1]", reason: "::1 is loopback", reachesListener: true },
  { host: "[fc00::1]", reason: "fc00::1 is unique local", reachesListener: false },
  // The URL parser writes it ::ffff:7f00:1.
  { host: "[::ffff:127.0.0.1]", reason: "::ffff:7f00:1 is loopback", reachesListener: true },
  { host: "0.0.0.0", reason: "0.0.0.0 is unspecified", reachesListener: true },
  { host: "2130706433", reason: "127.0.0.1 is loopback", reachesListener: true },
  { host: "loopback.test", reason: "loopback.test resolves to 127.0.0.1, which is loopback", reachesListener: true },
  // One answer mixing a public and a loopback address: refused as a whole.
  { host: "mixed.test", reason: "mixed.test resolves to 127.0.0.1, which is loopback", reachesListener: false },
  // DNS rebinding: public when the settings were saved, loopback when delivering.
  { host: "rebind.test", reason: "rebind.test resolves to 127.0.0.1, which is loopback", reachesListener: true }
]

const hint = " (refused unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true)"

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
        expect(error.endpoints, url).toStrictEqual([
          EndpointState.Retired({
            url,
            attempts: 1,
            why: "permanent",
            lastOutcome: AttemptOutcome.Permanent({ reason: expected, code: EgressPolicy.blockedAddressCode })
          })
        ])
        expect(records, url).toHaveLength(1)
        expect(records[0], url).toMatchObject({ url, attemptNumber: 1, outcome: "Permanent", error: expected })
        expect(records[0]!.status).toBeUndefined()
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
      expect(records[0]).toMatchObject({ outcome: "Retryable" })
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
        app.relay.messageJobs("rebound-1"),
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

describe("SSRF guard when settings are saved", () => {
  const settings = (...urls: ReadonlyArray<string>) => ({
    writeKey: "wk_saved",
    webhooks: { enabled: true, endpoints: urls.map((url) => ({ url })) }
  })

  it.live("PUT /admin/sources refuses internal URLs with a 400 naming the field, and stores nothing", () =>
    Effect.gen(function*() {
      const dns = scriptedDns()
      const app = yield* startApp({ egress: egress(false, dns.layer), dispatch: false })
      for (const { host, reason } of cases.filter((entry) => entry.host !== "rebind.test")) {
        const url = `http://${host}:9000/hook`
        const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", { body: settings(url) })
        expect(answer.status, url).toBe(400)
        expect(answer.body, url).toStrictEqual({
          success: false,
          code: "invalid_settings",
          message: `webhooks.endpoints[0].url: points at a refused address: ${reason}${hint}`,
          errors: [{
            path: "webhooks.endpoints[0].url",
            message: `points at a refused address: ${reason}${hint}`
          }]
        })
      }
      // Every refused endpoint is named, the allowed ones are not.
      const several = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("https://hooks.example.com/in", "http://10.1.2.3/in", "https://nowhere.test/in", "http://[::1]/")
      })
      expect(several.status).toBe(400)
      expect(several.body.errors.map((issue: { path: string }) => issue.path)).toStrictEqual([
        "webhooks.endpoints[1].url",
        "webhooks.endpoints[3].url"
      ])
      expect((yield* call(app.baseUrl, "GET", "/admin/sources/saved")).status).toBe(404)
      expect(yield* app.relay.listSources).toStrictEqual([])

      // A name that does not resolve now is accepted: delivery checks again. So is a public address.
      const unresolved = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("https://nowhere.test/in", "https://93.184.216.34/in")
      })
      expect(unresolved.status).toBe(200)
    }))

  it.live("refuses localhost through the system resolver, and the library's putSource refuses too", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: EgressPolicy.layer({ allowPrivateNetworks: false }), dispatch: false })
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("http://localhost:9000/hook")
      })
      expect(answer.status).toBe(400)
      expect(answer.body.errors).toMatchObject([{ path: "webhooks.endpoints[0].url" }])
      expect(answer.body.errors[0].message).toMatch(/^points at a refused address: localhost resolves to/)

      const error = yield* app.relay.putSource({ id: "lib", ...settings("http://192.168.1.1/") }).pipe(Effect.flip)
      expect(error).toStrictEqual(
        new EgressPolicy.BlockedEndpoints({
          errors: [{
            path: "webhooks.endpoints[0].url",
            message: `points at a refused address: 192.168.1.1 is private${hint}`
          }]
        })
      )
      expect(yield* app.relay.listSources).toStrictEqual([])
    }))

  it.live("accepts the same URLs with the escape hatch", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ egress: egress(true, scriptedDns().layer), dispatch: false })
      const answer = yield* call(app.baseUrl, "PUT", "/admin/sources/saved", {
        body: settings("http://127.0.0.1:9000/hook", "http://[fc00::1]/", "http://loopback.test/", "http://0.0.0.0/")
      })
      expect(answer.status).toBe(200)
      expect((yield* app.relay.getSource("saved")).webhooks?.endpoints).toHaveLength(4)
    }))

  it.live("HOOKRELAY_CONFIG provisioning refuses the whole file, naming the source and field", () =>
    Effect.gen(function*() {
      const dns = scriptedDns()
      const policy = egress(false, dns.layer)
      const app = yield* startApp({ egress: policy, dispatch: false })
      const directory = yield* tempDirectory
      const path = Path.join(directory, "config.json")
      writeFileSync(
        path,
        JSON.stringify({
          sources: [
            {
              id: "fine",
              writeKey: "wk_fine",
              webhooks: { enabled: true, endpoints: [{ url: "https://93.184.216.34/" }] }
            },
            {
              id: "internal",
              writeKey: "wk_internal",
              webhooks: {
                enabled: true,
                endpoints: [{ url: "https://hooks.example.com/" }, { url: "http://169.254.169.254/" }]
              }
            }
          ]
        })
      )
      const error = yield* provision(path).pipe(
        Effect.provide(policy),
        Effect.provideService(Relay, app.relay),
        Effect.flip
      )
      expect(error).toStrictEqual(
        new InvalidConfigFile({
          path,
          problems: [
            `sources[1].webhooks.endpoints[1].url: points at a refused address: 169.254.169.254 is link-local${hint}`
          ]
        })
      )
      expect(yield* app.relay.listSources).toStrictEqual([])
    }))
})

describe("SSRF guard in the server process (src/main.ts)", () => {
  /** Runs `src/main.ts` with `env` until it exits by itself (at most 30 s): its exit code and output. */
  const runServer = (env: Record<string, string>) =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const port = yield* Effect.promise(freePort)
      return yield* Effect.callback<{ readonly code: number | null; readonly output: string }>((resume) => {
        const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
          cwd: repoRoot,
          env: {
            ...process.env,
            HOST: "127.0.0.1",
            PORT: String(port),
            HOOKRELAY_DATA_DIR: directory,
            DATABASE_URL: "",
            ...env
          },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
        child.once("exit", (code) => {
          clearTimeout(timer)
          resume(Effect.succeed({ code, output }))
        })
        return Effect.sync(() => child.kill("SIGKILL"))
      })
    })

  it.live("refuses to start with the sample config (a loopback webhook) unless private networks are allowed", () =>
    Effect.gen(function*() {
      const refused = yield* runServer({
        HOOKRELAY_CONFIG: "examples/config.sample.json",
        HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "false"
      })
      expect(refused.code).not.toBe(0)
      expect(refused.output).toContain(
        `sources[0].webhooks.endpoints[0].url: points at a refused address: 127.0.0.1 is loopback${hint}`
      )
      const invalid = yield* runServer({ HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "maybe" })
      expect(invalid.code).not.toBe(0)
      expect(invalid.output).toContain("HOOKRELAY_ALLOW_PRIVATE_NETWORKS")
    }))
})
