/**
 * Soak inputs for the admin API (REFERENCE §5–7): every route with no token, a wrong one and the right one; source
 * settings valid and broken in each rule of REFERENCE §1; deletions, audiences and traits; odd ids and query strings.
 * Nothing here may change the soak's own source (its deliveries are what the soak counts): settings are written only to
 * sources of the fuzzer's own (`fuzz-…`, webhooks disabled, loopback URLs), deletions name users no tracking input
 * uses (`gone-…`), audiences and traits go to the fuzzer's sources.
 */
import fc from "fast-check"
import type { Expect, FuzzContext, HttpCase } from "./fuzzCase.js"
import { request } from "./fuzzTracking.js"
import type { Maker } from "./fuzzTracking.js"

const fuzzSource = fc.nat(40).map((n) => `fuzz-${n}`)
const oddId = fc.oneof(
  fuzzSource,
  fc.string({ unit: "grapheme", maxLength: 40 }).map((id) => encodeURIComponent(id)),
  fc.constantFrom("%2e%2e", "..", "a%2Fb", "%00", "x".repeat(300), encodeURIComponent("'; DROP TABLE sources; --"))
)

const endpoint = fc.record({
  url: fc.nat(3).map((n) => `http://127.0.0.1:9/hook-${n}?q=1`),
  headers: fc.option(
    fc.dictionary(fc.stringMatching(/^x-[a-z]{1,10}$/), fc.string({ maxLength: 20 }).filter((v) => !/[\r\n]/.test(v)), {
      maxKeys: 3
    }),
    { nil: undefined }
  )
}, { requiredKeys: ["url"] })

/** Source settings that pass REFERENCE §1 (webhooks disabled, so nothing is ever sent), and each broken in one rule. */
const settings = fc.record({
  writeKey: fc.nat(60).map((n) => `wk-fuzz-${n}`),
  endpoints: fc.array(endpoint, { minLength: 1, maxLength: 5 }),
  sharedSecret: fc.option(fc.string({ minLength: 1, maxLength: 30 }), { nil: undefined }),
  breakage: fc.constantFrom(
    "none",
    "none",
    "none",
    "no endpoints",
    "six endpoints",
    "ftp url",
    "relative url",
    "header name",
    "header CRLF",
    "override content-type",
    "override x-signature",
    "enabled not boolean",
    "writeKey not string",
    "no webhooks",
    "not an object"
  )
}).map(({ breakage, endpoints, sharedSecret, writeKey }) => {
  const webhooks: Record<string, unknown> = {
    enabled: false,
    endpoints,
    ...(sharedSecret === undefined ? {} : { sharedSecret })
  }
  const body: Record<string, unknown> = { writeKey, webhooks }
  const first = { url: "http://127.0.0.1:9/hook" }
  switch (breakage) {
    case "no endpoints":
      webhooks.endpoints = []
      break
    case "six endpoints":
      webhooks.endpoints = Array.from({ length: 6 }, () => first)
      break
    case "ftp url":
      webhooks.endpoints = [{ url: "ftp://127.0.0.1/hook" }]
      break
    case "relative url":
      webhooks.endpoints = [{ url: "/hook" }]
      break
    case "header name":
      webhooks.endpoints = [{ ...first, headers: { "bad name": "x" } }]
      break
    case "header CRLF":
      webhooks.endpoints = [{ ...first, headers: { "x-ok": "a\r\nInjected: yes" } }]
      break
    case "override content-type":
      webhooks.endpoints = [{ ...first, headers: { "Content-Type": "text/plain" } }]
      break
    case "override x-signature":
      webhooks.endpoints = [{ ...first, headers: { "x-SIGNATURE": "forged" } }]
      break
    case "enabled not boolean":
      webhooks.enabled = "yes"
      break
    case "writeKey not string":
      body.writeKey = 42
      break
    case "no webhooks":
      // A source may have no webhook destination (REFERENCE §1): valid.
      delete body.webhooks
      break
    case "not an object":
      return { breakage, body: [body] as unknown }
  }
  return { breakage, body: body }
})

const tokens = ["right", "right", "right", "right", "none", "wrong", "empty bearer", "basic"] as const

const authorization = (context: FuzzContext, token: typeof tokens[number]): Record<string, string> => {
  switch (token) {
    case "right":
      return { authorization: `Bearer ${context.adminToken}` }
    case "none":
      return {}
    case "wrong":
      return { authorization: `Bearer ${context.adminToken}x` }
    case "empty bearer":
      return { authorization: "Bearer " }
    case "basic":
      return { authorization: `Basic ${Buffer.from(`${context.adminToken}:`).toString("base64")}` }
  }
}

const routes = [
  "list sources",
  "get source",
  "put source",
  "put own source, broken body",
  "delete source",
  "usage",
  "source messages",
  "search messages",
  "get message",
  "dead letters",
  "replay",
  "backlog",
  "deletion",
  "get deletion",
  "audience",
  "trait",
  "openapi",
  "oversized body"
] as const

const bodyOf = (value: unknown) => Buffer.from(JSON.stringify(value))
const queryValue = fc.oneof(
  fc.constantFrom("", "-1", "0", "abc", "1e9", "30", "2.5", "%ZZ", "99999999999999999999"),
  fc.nat(200).map(String)
)

/** One admin request; with a wrong or no token every route is 401 whatever its body (checked before it is read). */
export const admin: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...routes),
  fc.constantFrom(...tokens),
  oddId,
  settings,
  queryValue,
  fc.nat(1000),
  fc.array(fc.oneof(fc.nat(50).map((n) => `gone-${n}`), fc.integer(), fc.constant(null)), { maxLength: 20 })
).map(([route, token, id, source, query, pick, members]) => (context): HttpCase => {
  const ok = token === "right"
  const detail = route === "put source" ? `: ${source.breakage}` : ""
  const send = (method: string, path: string, expect: Expect, body?: Buffer, deletion = false): HttpCase => ({
    ...request(
      `admin: ${route}${detail}${ok ? "" : ` (token ${token})`}`,
      ok ? expect : "4xx",
      path,
      body,
      { "content-type": "application/json", ...authorization(context, token) },
      [],
      0,
      method
    ),
    deletion: ok && deletion
  })
  const own = context.sourceId
  switch (route) {
    case "list sources":
      return send("GET", `/admin/sources?limit=${query}`, "any")
    case "get source":
      return send("GET", `/admin/sources/${pick % 4 === 0 ? own : id}`, "any")
    case "put source":
      return send(
        "PUT",
        `/admin/sources/fuzz-${pick % 40}`,
        source.breakage === "none" || source.breakage === "no webhooks" ? "any" : "4xx",
        bodyOf(source.body)
      )
    case "put own source, broken body": {
      const text = JSON.stringify({ writeKey: context.writeKey, webhooks: { enabled: true, endpoints: [] } })
      const bodies = [text.slice(0, pick % text.length), "not json", "", text, "[]"]
      return send("PUT", `/admin/sources/${own}`, "4xx", Buffer.from(bodies[pick % bodies.length]!))
    }
    case "delete source":
      return send("DELETE", `/admin/sources/${id === own ? "fuzz-0" : id}`, "any")
    case "usage":
      return send("GET", `/admin/sources/${pick % 2 === 0 ? own : id}/usage?days=${query}`, "any")
    case "source messages":
      return send("GET", `/admin/sources/${pick % 2 === 0 ? own : id}/messages?limit=${query}`, "any")
    case "search messages":
      return send("GET", `/admin/messages?userId=${encodeURIComponent(`u-${id}`)}&limit=${query}`, "any")
    case "get message":
      return send("GET", `/admin/messages/${id}`, "any")
    case "dead letters":
      return send("GET", `/admin/dead-letters?sourceId=${pick % 2 === 0 ? own : id}&limit=${query}`, "any")
    case "replay":
      return send("POST", `/admin/dead-letters/${id}/replay`, "4xx")
    case "backlog":
      return send("GET", "/admin/backlog", "200")
    case "deletion": {
      // Without sourceIds a deletion reaches every source, the soak's own too: one delete notification for it.
      const variants: Array<[unknown, Expect, boolean]> = [
        [{ userId: `gone-${pick}` }, "any", true],
        [{ userId: `gone-${pick}`, sourceIds: [`fuzz-${pick % 40}`] }, "any", false],
        // A number is taken as its string, as in tracking; out of the range tracked user ids are drawn from.
        [{ userId: 2_000_000_000 + pick }, "any", true],
        [{ sourceIds: "all" }, "4xx", false],
        [{ userId: `gone-${pick}`, sourceIds: "fuzz-1" }, "4xx", false],
        ["gone", "4xx", false]
      ]
      const [body, expect, reachesOwn] = variants[pick % variants.length]!
      return send("POST", "/admin/deletions", expect, bodyOf(body), reachesOwn)
    }
    case "get deletion":
      return send("GET", `/admin/deletions/${id}`, "any")
    case "audience":
      return send(
        "PUT",
        `/admin/sources/fuzz-${pick % 40}/audiences/${encodeURIComponent(`Fuzz ${id}`)}`,
        "any",
        bodyOf(pick % 5 === 0 ? { userIds: "x" } : { userIds: members })
      )
    case "trait":
      return send(
        "PUT",
        `/admin/sources/fuzz-${pick % 40}/traits/${encodeURIComponent(`score ${pick % 3}`)}`,
        "any",
        bodyOf(
          pick % 4 === 0
            ? { values: [] }
            : { values: Object.fromEntries(members.map((member, i) => [String(member), i % 3 === 0 ? null : i])) }
        )
      )
    case "openapi":
      return send("GET", "/admin/openapi.json", "200")
    case "oversized body":
      return send(
        "PUT",
        `/admin/sources/fuzz-${pick % 40}`,
        "4xx",
        Buffer.from(`{"writeKey":"${"k".repeat(300_000 + pick)}"}`)
      )
  }
})
