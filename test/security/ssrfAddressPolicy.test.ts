import { describe, expect, it } from "@effect/vitest"
import { blockedRange, ipFamily, unbracket } from "../../src/network/AddressPolicy.js"

/** The host undici connects to for a URL: the WHATWG parser's normal form, brackets removed. */
const urlHost = (url: string) => unbracket(new URL(url).hostname)

describe("AddressPolicy: which addresses deliveries may reach (SPEC §8)", () => {
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
    ["[::1]", "loopback"]
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
    "2001:67c:2e8:22::c100:68b"
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
