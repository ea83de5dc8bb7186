import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import type { DeliveryJob } from "../../src/delivery/Deliver.js"
import * as Transport from "../../src/delivery/Transport.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import { type ResolvedAddress, ResolveError } from "../../src/network/Resolver.js"
import * as Resolver from "../../src/network/Resolver.js"

/**
 * Fixtures of the SSRF guard's end-to-end tests (REFERENCE §8): a real listener on `::` (every loopback form reaches it:
 * 127.0.0.1, ::1, ::ffff:127.0.0.1 and 0.0.0.0) that counts the connections it gets, a scripted DNS, and the tables of
 * refused hosts.
 */

export interface Listener {
  readonly port: number
  connections: number
  readonly paths: Array<string>
}

export const startListener: Effect.Effect<Listener, never, Scope.Scope> = Effect.acquireRelease(
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

export const publicAddress: ResolvedAddress = { address: "93.184.216.34", family: 4 }
export const loopback: ResolvedAddress = { address: "127.0.0.1", family: 4 }

/**
 * A scripted DNS: `rebind.test` answers a public address the first time it is asked and loopback afterwards;
 * `mixed.test` answers a public and a loopback address at once; `loopback.test` answers loopback; `docs.test` a public
 * and a documentation address; anything else does not resolve. `lookups` counts the questions per name.
 */
export const scriptedDns = () => {
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
      case "docs.test":
        return Effect.succeed([publicAddress, { address: "2001:db8::10", family: 6 }])
      default:
        return Effect.fail(
          new ResolveError({ hostname, code: "ENOTFOUND", message: `getaddrinfo ENOTFOUND ${hostname}` })
        )
    }
  })
  return { lookups, layer }
}

export const egress = (allowPrivateNetworks: boolean, resolver: Layer.Layer<Resolver.Resolver>) =>
  EgressPolicy.layerWithResolver({ allowPrivateNetworks }).pipe(Layer.provide(resolver))

export const guardedTransport = (allowPrivateNetworks: boolean, resolver: Layer.Layer<Resolver.Resolver>) =>
  Transport.layerWithPolicy().pipe(Layer.provideMerge(egress(allowPrivateNetworks, resolver)))

export const body = new TextEncoder().encode(`{"version":1,"type":"track","messageId":"m-1","event":"E","context":{}}`)

export const job = (url: string): DeliveryJob => ({
  jobId: "job-1",
  messageId: "m-1",
  body,
  settings: { sharedSecret: "s3cret", endpoints: [{ url }] }
})

export interface Case {
  /** The URL's host (with brackets for IPv6), the port is the listener's. */
  readonly host: string
  /** The refusal, as the attempt record gives it. */
  readonly reason: string
  /** A loopback form: with the escape hatch the real listener gets the request. */
  readonly reachesListener: boolean
}

export const cases: ReadonlyArray<Case> = [
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
  // Translated (RFC 6145): judged by the IPv4 address inside.
  { host: "[::ffff:0:127.0.0.1]", reason: "::ffff:0:7f00:1 is loopback", reachesListener: false },
  { host: "0.0.0.0", reason: "0.0.0.0 is unspecified", reachesListener: true },
  { host: "2130706433", reason: "127.0.0.1 is loopback", reachesListener: true },
  { host: "loopback.test", reason: "loopback.test resolves to 127.0.0.1, which is loopback", reachesListener: true },
  // One answer mixing a public and a loopback address: refused as a whole.
  { host: "mixed.test", reason: "mixed.test resolves to 127.0.0.1, which is loopback", reachesListener: false },
  // DNS rebinding: public when the settings were saved, loopback when delivering.
  { host: "rebind.test", reason: "rebind.test resolves to 127.0.0.1, which is loopback", reachesListener: true }
]

export const hint = " (refused unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true)"

/** Ranges no setting opens: the refusal is the same with and without the escape hatch. */
export const alwaysRefused: ReadonlyArray<{ readonly host: string; readonly reason: string }> = [
  { host: "192.0.2.1", reason: "192.0.2.1 is reserved" },
  { host: "198.51.100.1", reason: "198.51.100.1 is reserved" },
  { host: "203.0.113.1", reason: "203.0.113.1 is reserved" },
  { host: "192.88.99.1", reason: "192.88.99.1 is reserved" },
  { host: "[2001:db8::1]", reason: "2001:db8::1 is reserved" },
  { host: "[2001:0:4136:e378:8000:63bf:3fff:fdd2]", reason: "2001:0:4136:e378:8000:63bf:3fff:fdd2 is Teredo tunnel" },
  { host: "[::ffff:0:192.0.2.1]", reason: "::ffff:0:c000:201 is reserved" },
  { host: "[64:ff9b::203.0.113.1]", reason: "64:ff9b::cb00:7101 is reserved" },
  { host: "[2002:c058:6301::1]", reason: "2002:c058:6301::1 is reserved" },
  { host: "224.0.0.1", reason: "224.0.0.1 is multicast" },
  { host: "docs.test", reason: "docs.test resolves to 2001:db8::10, which is reserved" }
]
