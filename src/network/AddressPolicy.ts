import ipaddr from "ipaddr.js"
import { isIP } from "node:net"

/**
 * Which IP addresses outbound deliveries may reach (REFERENCE §8): a pure classifier over ipaddr.js's range tables, no I/O.
 *
 * Refused: every address whose ipaddr.js `range()` is not `unicast` — loopback, private (RFC 1918, carrier-grade NAT
 * 100.64.0.0/10, unique local fc00::/7), link-local (with the cloud metadata address 169.254.169.254), unspecified,
 * multicast, broadcast, Teredo and the reserved, documentation and benchmarking ranges. Every IPv6 form that carries an
 * IPv4 address (mapped `::ffff:0:0/96`, translated `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`,
 * IPv4-compatible `::a.b.c.d`) is judged by the IPv4 address inside.
 */

/** Why an address is refused: the name of its range, as the attempt record and the 400 answer say it. */
export type BlockedRange =
  | "loopback"
  | "private"
  | "carrier-grade NAT"
  | "link-local"
  | "unspecified"
  | "unique local"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "Teredo tunnel"

/** The ranges `HOOKRELAY_ALLOW_PRIVATE_NETWORKS=true` opens: this machine and internal networks, nothing else. */
export const privateNetworkRanges: ReadonlySet<BlockedRange> = new Set<BlockedRange>([
  "loopback",
  "private",
  "carrier-grade NAT",
  "link-local",
  "unspecified",
  "unique local"
])

/**
 * ipaddr.js range names to ours. A name not listed (benchmarking, documentation, AS112, ORCHID, ... and any range a
 * later ipaddr.js adds) is "reserved": refused, whatever the setting.
 */
const rangeNames: Readonly<Record<string, BlockedRange>> = {
  loopback: "loopback",
  private: "private",
  deprecatedSiteLocal: "private", // fec0::/10
  carrierGradeNat: "carrier-grade NAT",
  linkLocal: "link-local",
  unspecified: "unspecified",
  uniqueLocal: "unique local",
  multicast: "multicast",
  broadcast: "broadcast",
  teredo: "Teredo tunnel"
}

const rangeOf = (address: ipaddr.IPv4 | ipaddr.IPv6): BlockedRange | undefined => {
  // The .d.ts lists fewer names than the tables hold (discard, segmentRouting...): read it as a string.
  const name: string = address.range()
  return name === "unicast" ? undefined : rangeNames[name] ?? "reserved"
}

const ipv4 = (high: number, low: number): ipaddr.IPv4 => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/** The IPv4 address an IPv6 address carries and is judged by, if it is one of the forms that carry one. */
const embeddedIpv4 = (address: ipaddr.IPv6): ipaddr.IPv4 | undefined => {
  const [, p1 = 0, p2 = 0, , , , p6 = 0, p7 = 0] = address.parts
  switch (address.range() as string) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d, translated (SIIT)
      return ipv4(p6, p7)
    case "rfc6052": // 64:ff9b::a.b.c.d; 64:ff9b:1::/48 (local-use NAT64, RFC 8215) carries none at a fixed place
      return p2 === 0 ? ipv4(p6, p7) : undefined
    case "6to4": // 2002:aabb:ccdd::, the IPv4 address of the site
      return ipv4(p1, p2)
    case "unicast": // ::a.b.c.d, IPv4-compatible (deprecated): ipaddr.js gives it no range of its own
      return address.parts.slice(0, 6).every((part) => part === 0) ? ipv4(p6, p7) : undefined
    default:
      return undefined
  }
}

const rangeOf6 = (address: ipaddr.IPv6): BlockedRange | undefined => {
  const inside = embeddedIpv4(address)
  if (inside !== undefined) return rangeOf(inside)
  return address.range() === "rfc6052" ? "private" : rangeOf(address)
}

/** Strips the brackets of a URL's IPv6 host (`[::1]`) and an IPv6 zone (`fe80::1%eth0`). */
export const unbracket = (host: string): string => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  const zone = bare.indexOf("%")
  return zone === -1 || isIP(bare) !== 6 ? bare : bare.slice(0, zone)
}

/** `4` or `6` for an IP literal (brackets allowed), `0` for a host name: what `net.connect` takes as a literal. */
export const ipFamily = (host: string): 0 | 4 | 6 => isIP(unbracket(host)) as 0 | 4 | 6

/**
 * The refused range an IP address is in, or `undefined` when it is a public address deliveries may reach. Anything
 * that is not an IP address (a host name) is `undefined` too: resolve it first.
 */
export const blockedRange = (address: string): BlockedRange | undefined => {
  const bare = unbracket(address)
  switch (isIP(bare)) {
    case 4:
      return rangeOf(ipaddr.IPv4.parse(bare))
    case 6:
      return rangeOf6(ipaddr.IPv6.parse(bare))
    default:
      return undefined
  }
}
