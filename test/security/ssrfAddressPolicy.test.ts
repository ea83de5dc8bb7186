import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { blockedRange, ipFamily, unbracket } from "../../src/network/AddressPolicy.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import * as Resolver from "../../src/network/Resolver.js"
import { ResolveError } from "../../src/network/Resolver.js"

/** The host undici connects to for a URL: the WHATWG parser's normal form, brackets removed. */
const urlHost = (url: string) => unbracket(new URL(url).hostname)

describe("AddressPolicy: which addresses deliveries may reach (REFERENCE §8)", () => {
  it.each([
    // IPv4: each refused range, its edges, and the public addresses just outside.
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["169.254.169.254", "link-local"],
    ["169.254.0.1", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["198.18.0.1", "reserved"],
    // IPv6 and the IPv6 forms of refused IPv4 addresses.
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "unique local"],
    ["fd12:3456:789a::1", "unique local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff::1", "link-local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:10.1.2.3", "private"],
    ["::ffff:169.254.169.254", "link-local"],
    ["::ffff:0.0.0.0", "unspecified"],
    ["::127.0.0.1", "loopback"],
    ["::c0a8:101", "private"],
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b:1::1", "private"],
    ["2002:7f00:1::1", "loopback"],
    ["2002:a9fe:a9fe::", "link-local"],
    ["100::1", "reserved"],
    ["[::1]", "loopback"],
    // Documentation, 6to4 relay anycast and the other special-purpose IPv4 ranges, with their edges.
    ["192.0.2.0", "reserved"],
    ["192.0.2.255", "reserved"],
    ["198.51.100.1", "reserved"],
    ["198.51.100.255", "reserved"],
    ["203.0.113.0", "reserved"],
    ["203.0.113.255", "reserved"],
    ["192.88.99.1", "reserved"],
    ["192.88.99.255", "reserved"],
    ["192.175.48.1", "reserved"], // AS112
    ["192.52.193.1", "reserved"], // AMT
    // Teredo 2001::/32 (a tunnel), documentation 2001:db8::/32 and 3fff::/20, and the rest of 2001::/23.
    ["2001::1", "Teredo tunnel"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo tunnel"],
    ["2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "Teredo tunnel"],
    ["2001:db8::1", "reserved"],
    ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
    ["3fff::1", "reserved"],
    ["2001:1::1", "reserved"],
    ["2001:2::1", "reserved"], // benchmarking
    // Translated ::ffff:0:a.b.c.d (RFC 6145), judged by the IPv4 address inside.
    ["::ffff:0:7f00:1", "loopback"],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::ffff:0:a00:1", "private"],
    ["::ffff:0:a9fe:a9fe", "link-local"],
    ["::ffff:0:0:0", "unspecified"],
    ["::ffff:0:c000:201", "reserved"],
    // The other embedding forms around a documentation or relay address: judged by it too.
    ["::ffff:192.0.2.1", "reserved"],
    ["::ffff:203.0.113.9", "reserved"],
    ["64:ff9b::c000:201", "reserved"],
    ["64:ff9b::198.51.100.7", "reserved"],
    ["2002:c000:201::1", "reserved"],
    ["2002:c058:6301::", "reserved"],
    ["2002:cb00:7109::1", "reserved"]
  ])("refuses %s (%s)", (address, range) => {
    expect(blockedRange(address)).toBe(range)
  })

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",
    "172.15.255.255",
    "100.63.255.255",
    "100.128.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "192.169.0.1",
    "11.0.0.1",
    "126.255.255.255",
    "128.0.0.1",
    "223.255.255.255",
    "2606:4700::1",
    "2001:4860:4860::8888",
    "2a00:1450:4001:82a::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "fbff::1",
    "fe00::1",
    "2001:67c:2e8:22::c100:68b",
    // Just outside the documentation and relay ranges, and the embedding forms of a public address.
    "192.0.1.255",
    "192.0.3.0",
    "198.51.99.255",
    "198.51.101.0",
    "203.0.112.255",
    "203.0.114.0",
    "192.88.98.255",
    "192.88.100.0",
    "2001:200::1",
    "2001:db7:ffff::1",
    "2001:db9::1",
    "::ffff:0:808:808",
    "::ffff:0:8.8.8.8",
    "2002:5db8:d822::1"
  ])("allows the public address %s", (address) => {
    expect(blockedRange(address)).toBeUndefined()
  })

  it("judges URL hosts in the form the URL parser gives them: decimal, octal, hex and mapped forms of loopback", () => {
    for (
      const url of [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[0:0:0:0:0:ffff:7f00:1]/",
        "http://[::ffff:0:127.0.0.1]/",
        "http://[::1]:8080/"
      ]
    ) {
      const host = urlHost(url)
      expect(ipFamily(host), url).not.toBe(0)
      expect(blockedRange(host), url).toBe("loopback")
    }
    expect(blockedRange(urlHost("http://[::]/"))).toBe("unspecified")
    expect(blockedRange(urlHost("http://0/"))).toBe("unspecified")
  })

  it("leaves host names to the resolver: a name is neither refused nor an IP", () => {
    for (const name of ["localhost", "example.com", "127.0.0.1.nip.io", "::1.example"]) {
      expect(ipFamily(name)).toBe(0)
      expect(blockedRange(name)).toBeUndefined()
    }
  })
})

describe("EgressPolicy: HOOKRELAY_ALLOW_PRIVATE_NETWORKS opens loopback and the private ranges, nothing else", () => {
  const hint = " (refused unless HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true)"
  const always = " (always refused)"

  /** An address, its range, and whether the escape hatch opens it. */
  const table: ReadonlyArray<readonly [string, string, boolean]> = [
    ["127.0.0.1", "loopback", true],
    ["10.0.0.1", "private", true],
    ["100.64.0.1", "carrier-grade NAT", true],
    ["169.254.169.254", "link-local", true],
    ["0.0.0.0", "unspecified", true],
    ["fc00::1", "unique local", true],
    ["fe80::1", "link-local", true],
    ["::ffff:a00:1", "private", true], // mapped
    ["::ffff:0:7f00:1", "loopback", true], // translated
    ["64:ff9b::a9fe:a9fe", "link-local", true], // NAT64
    ["2002:a00:1::1", "private", true], // 6to4
    ["224.0.0.1", "multicast", false],
    ["255.255.255.255", "broadcast", false],
    ["240.0.0.1", "reserved", false],
    ["192.0.2.1", "reserved", false],
    ["198.51.100.1", "reserved", false],
    ["203.0.113.1", "reserved", false],
    ["192.88.99.1", "reserved", false],
    ["2001:db8::1", "reserved", false],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo tunnel", false],
    ["::ffff:0:c000:201", "reserved", false], // translated documentation address
    ["2002:c058:6301::", "reserved", false] // 6to4 of the relay anycast address
  ]

  /** `docs.test` answers a public and a documentation address; `private.test` a private one. */
  const resolver = Resolver.layerTest((hostname) =>
    hostname === "docs.test"
      ? Effect.succeed([{ address: "93.184.216.34", family: 4 }, { address: "192.0.2.10", family: 4 }])
      : hostname === "private.test"
      ? Effect.succeed([{ address: "192.168.1.1", family: 4 }])
      : Effect.fail(new ResolveError({ hostname, code: "ENOTFOUND", message: `getaddrinfo ENOTFOUND ${hostname}` }))
  )

  it.effect("refuses every range of the table by default, and keeps refusing the non-private ones when opened", () =>
    Effect.gen(function*() {
      const closed = yield* EgressPolicy.make(false)
      const opened = yield* EgressPolicy.make(true)
      for (const [address, range, opens] of table) {
        const message = `blocked_address: ${address} is ${range}${opens ? hint : always}`
        expect(closed.checkLiteral(address)?.message, address).toBe(message)
        expect(closed.checkLiteral(`[${address}]`)?.range, address).toBe(range)
        expect(opened.checkLiteral(address)?.message, address).toBe(opens ? undefined : message)
        const url = `http://${address.includes(":") ? `[${address}]` : address}/hook`
        expect(yield* Effect.flip(closed.checkUrl(url)), url).toMatchObject({ range })
        if (opens) yield* opened.checkUrl(url)
        else expect(yield* Effect.flip(opened.checkUrl(url)), url).toMatchObject({ range })
      }
    }).pipe(Effect.provide(resolver)))

  it.effect("checks resolved names the same way: one documentation address refuses the answer, opened or not", () =>
    Effect.gen(function*() {
      const message = `blocked_address: docs.test resolves to 192.0.2.10, which is reserved${always}`
      for (const allow of [false, true]) {
        const policy = yield* EgressPolicy.make(allow)
        expect((yield* Effect.flip(policy.resolve("docs.test"))).message).toBe(message)
        expect((yield* Effect.flip(policy.checkUrl("https://docs.test/in"))).message).toBe(message)
      }
      expect(yield* (yield* EgressPolicy.make(true)).resolve("private.test")).toStrictEqual([
        { address: "192.168.1.1", family: 4 }
      ])
    }).pipe(Effect.provide(resolver)))

  it.effect("save-time check with the escape hatch: names only the endpoints it still refuses", () =>
    Effect.gen(function*() {
      const policy = yield* EgressPolicy.make(true)
      const urls = ["http://127.0.0.1/", "http://[2001:db8::1]/", "http://private.test/", "http://203.0.113.1/"]
      const error = yield* Effect.flip(
        EgressPolicy.checkSource(policy, { webhooks: { enabled: true, endpoints: urls.map((url) => ({ url })) } })
      )
      expect(error.errors).toStrictEqual([
        {
          path: "webhooks.endpoints[1].url",
          message: `points at a refused address: 2001:db8::1 is reserved${always}`
        },
        {
          path: "webhooks.endpoints[3].url",
          message: `points at a refused address: 203.0.113.1 is reserved${always}`
        }
      ])
    }).pipe(Effect.provide(resolver)))
})
