import { isIPv4, isIPv6 } from "node:net"

/**
 * Which IP addresses outbound deliveries may reach (SPEC §8): a pure classifier, no I/O.
 *
 * Refused: loopback, private (RFC 1918, carrier-grade NAT 100.64.0.0/10, unique local fc00::/7), link-local
 * (169.254.0.0/16 with the cloud metadata address 169.254.169.254, fe80::/10), unspecified (0.0.0.0/8, ::),
 * multicast, broadcast and the other special-purpose ranges nothing public lives in; and every IPv6 form that
 * carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`) is judged by the IPv4 address inside.
 */

/** Why an address is refused: the name of its range, as the attempt record and the 400 answer say it. */
export type BlockedRange =
  | "loopback"
  | "private"
  | "carrier-grade NAT"
  | "link-local"
  | "unspecified"
  | "multicast"
  | "broadcast"
  | "unique local"
  | "reserved"

interface Range4 {
  readonly base: number
  readonly bits: number
  readonly range: BlockedRange
}

const ipv4ToNumber = (address: string): number => {
  const parts = address.split(".")
  return ((Number(parts[0]) << 24) | (Number(parts[1]) << 16) | (Number(parts[2]) << 8) | Number(parts[3])) >>> 0
}

const range4 = (cidr: string, range: BlockedRange): Range4 => {
  const [base, bits] = cidr.split("/")
  return { base: ipv4ToNumber(base!), bits: Number(bits), range }
}

/** Most specific first: 255.255.255.255 is broadcast before it is reserved (240.0.0.0/4). */
const blocked4: ReadonlyArray<Range4> = [
  range4("255.255.255.255/32", "broadcast"),
  range4("0.0.0.0/8", "unspecified"),
  range4("10.0.0.0/8", "private"),
  range4("100.64.0.0/10", "carrier-grade NAT"),
  range4("127.0.0.0/8", "loopback"),
  range4("169.254.0.0/16", "link-local"),
  range4("172.16.0.0/12", "private"),
  range4("192.0.0.0/24", "reserved"), // IETF protocol assignments
  range4("192.168.0.0/16", "private"),
  range4("198.18.0.0/15", "reserved"), // network benchmarking
  range4("224.0.0.0/4", "multicast"),
  range4("240.0.0.0/4", "reserved")
]

const inRange4 = (value: number, { base, bits }: Range4): boolean =>
  bits === 0 || (value >>> (32 - bits)) === (base >>> (32 - bits))

const blockedRange4 = (value: number): BlockedRange | undefined =>
  blocked4.find((range) => inRange4(value, range))?.range

/** An IPv6 address (already validated) as its eight 16-bit groups; a trailing dotted quad becomes two groups. */
const ipv6Groups = (address: string): ReadonlyArray<number> => {
  let text = address
  const dotted = text.lastIndexOf(".")
  if (dotted !== -1) {
    const colon = text.lastIndexOf(":")
    const v4 = ipv4ToNumber(text.slice(colon + 1))
    text = `${text.slice(0, colon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined]
  const parse = (part: string | undefined) =>
    part === undefined || part === "" ? [] : part.split(":").map((g) => parseInt(g, 16))
  const front = parse(head)
  if (tail === undefined) return front
  const back = parse(tail)
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back]
}

const embeddedIpv4 = (high: number, low: number): number => ((high << 16) | low) >>> 0

const blockedRange6 = (groups: ReadonlyArray<number>): BlockedRange | undefined => {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number]
  const zeroTo = (n: number) => groups.slice(0, n).every((group) => group === 0)
  if (zeroTo(8)) return "unspecified"
  if (zeroTo(7) && g7 === 1) return "loopback"
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated), 64:ff9b::a.b.c.d (NAT64): the IPv4 address inside.
  if (zeroTo(5) && g5 === 0xffff) return blockedRange4(embeddedIpv4(g6, g7))
  if (zeroTo(6)) return blockedRange4(embeddedIpv4(g6, g7))
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return blockedRange4(embeddedIpv4(g6, g7))
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return "private" // 64:ff9b:1::/48, local-use NAT64 (RFC 8215)
  if (g0 === 0x2002) return blockedRange4(embeddedIpv4(g1, g2)) // 6to4: the IPv4 address of the relay
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return "reserved" // 100::/64, discard-only
  if ((g0 & 0xfe00) === 0xfc00) return "unique local" // fc00::/7
  if ((g0 & 0xffc0) === 0xfe80) return "link-local" // fe80::/10
  if ((g0 & 0xffc0) === 0xfec0) return "private" // fec0::/10, deprecated site-local
  if ((g0 & 0xff00) === 0xff00) return "multicast" // ff00::/8
  return undefined
}

/** Strips the brackets of a URL's IPv6 host (`[::1]`) and an IPv6 zone (`fe80::1%eth0`). */
export const unbracket = (host: string): string => {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host
  const zone = bare.indexOf("%")
  return zone === -1 || !isIPv6(bare) ? bare : bare.slice(0, zone)
}

/** `4` or `6` for an IP literal (brackets allowed), `0` for a host name. */
export const ipFamily = (host: string): 0 | 4 | 6 => {
  const bare = unbracket(host)
  return isIPv4(bare) ? 4 : isIPv6(bare) ? 6 : 0
}

/**
 * The refused range an IP address is in, or `undefined` when it is a public address deliveries may reach. Anything
 * that is not an IP address (a host name) is `undefined` too: resolve it first.
 */
export const blockedRange = (address: string): BlockedRange | undefined => {
  const bare = unbracket(address)
  if (isIPv4(bare)) return blockedRange4(ipv4ToNumber(bare))
  if (isIPv6(bare)) return blockedRange6(ipv6Groups(bare))
  return undefined
}
