/**
 * Soak inputs around the messages (`bench/soak.ts`): every way of giving (or not giving) a write key, odd headers,
 * wrong methods and paths, retries of earlier requests, requests no HTTP client library would send (raw bytes on a
 * socket), and the operational routes.
 */
import fc from "fast-check"
import { basic, type Expect, type FuzzContext, type RawCase, selectsWebhooks } from "./fuzzCase.js"
import { anyDraft, draftOf, materialize, materializeAll } from "./fuzzMessages.js"
import { type Maker, request, withKey } from "./fuzzTracking.js"

const auths = [
  "body key only",
  "header and body",
  "unknown header key",
  "unknown body key",
  "no key",
  "not base64",
  "key with password",
  "Bearer key",
  "lower-case basic",
  "empty user",
  "header wins over body"
] as const

/** A valid batch sent with each way of authenticating REFERENCE §2 names, and wrong ones. */
const auth: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...auths),
  fc.array(anyDraft, { minLength: 1, maxLength: 5 })
)
  .map(([variant, drafts]) => (context) => {
    const made = materializeAll(drafts, context)
    const send = (expect: Expect, headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
      request(
        `auth: ${variant}`,
        expect,
        "/v1/batch",
        Buffer.from(JSON.stringify({ batch: made.json, ...extra })),
        { "content-type": "application/json", ...headers },
        made.carried,
        made.anonymous
      )
    const key = context.writeKey
    switch (variant) {
      case "body key only":
        return send("200", {}, { writeKey: key })
      case "header and body":
        return send("200", { authorization: basic(key) }, { writeKey: key })
      case "unknown header key":
        return send("4xx", { authorization: basic(`${key}-unknown`) })
      case "unknown body key":
        return send("4xx", {}, { writeKey: "wk-nobody" })
      case "no key":
        return send("4xx", {})
      case "not base64":
        return send("4xx", { authorization: "Basic !!!%%%" })
      case "key with password":
        return send("any", { authorization: basic(key, "secret") })
      case "Bearer key":
        return send("any", { authorization: `Bearer ${key}` })
      case "lower-case basic":
        return send("any", { authorization: basic(key).replace("Basic", "basic") })
      case "empty user":
        return send("4xx", { authorization: basic("") })
      case "header wins over body":
        return send("200", { authorization: basic(key) }, { writeKey: "wk-nobody" })
    }
  })

const oddHeaders = [
  "text/plain",
  "form-urlencoded",
  "multipart",
  "no content-type",
  "retry count",
  "many headers",
  "long header",
  "forwarded garbage",
  "charset latin1",
  "connection close",
  "accept xml"
] as const

/** A valid message with headers real clients send, and some no client should. */
const headers: fc.Arbitrary<Maker> = fc.tuple(
  fc.constantFrom(...oddHeaders),
  anyDraft,
  fc.array(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), { minLength: 20, maxLength: 80 })
)
  .map(([variant, draft, names]) => (context) => {
    const made = materialize(draft, context, false)
    const carried = made.carried === undefined ? [] : [made.carried]
    const anonymous = made.carried === undefined && selectsWebhooks(made.json.integrations) ? 1 : 0
    const base = { authorization: basic(context.writeKey) }
    const extra: Record<string, Record<string, string>> = {
      "text/plain": { "content-type": "text/plain" },
      "form-urlencoded": { "content-type": "application/x-www-form-urlencoded" },
      multipart: { "content-type": "multipart/form-data; boundary=xyz" },
      "no content-type": {},
      "retry count": { "content-type": "application/json", "x-retry-count": "3" },
      "many headers": Object.fromEntries(names.map((name, i) => [`x-${name}`, `v${i}`])),
      "long header": { "content-type": "application/json", "x-long": "y".repeat(8000) },
      "forwarded garbage": {
        "x-forwarded-for": "not-an-ip, , ::zz",
        "x-forwarded-host": "[::1",
        "x-forwarded-proto": "gopher"
      },
      "charset latin1": { "content-type": "application/json; charset=iso-8859-1" },
      "connection close": { "content-type": "application/json", connection: "close" },
      "accept xml": { "content-type": "application/json", accept: "application/xml" }
    }
    return request(
      `headers: ${variant}`,
      variant === "forwarded garbage" ? "any" : "200",
      `/v1/${draft.type}`,
      Buffer.from(JSON.stringify(made.json)),
      { ...base, ...extra[variant] },
      carried,
      anonymous
    )
  })

const wrongPaths = [
  "/v1/unknown",
  "/v1/trackx",
  "/v1/track/extra",
  "/V1/TRACK",
  "/v1//track",
  "/v1",
  "/",
  "/v2/track",
  "/v1/track%2F..%2F..%2Fadmin%2Fsources",
  "/v1/%00",
  "/%ff%fe",
  "/v1/projects//settings",
  `/v1/${"a".repeat(6000)}`,
  "/v1/track/../batch",
  "/admin/../v1/track"
] as const

/**
 * Paths the REFERENCE does not name that the router takes for a tracking path: its matching ignores case and repeated
 * slashes.
 */
const tolerated = new Set(["/admin/../v1/track", "/v1/track/../batch", "/V1/TRACK", "/v1//track"])

/** A valid body at a path that does not exist, or with a method the path does not take. */
const methodsAndPaths: fc.Arbitrary<Maker> = fc.tuple(
  fc.nat(1),
  fc.constantFrom(...wrongPaths),
  fc.constantFrom("GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "FOO"),
  draftOf("track"),
  fc.boolean()
)
  .map(([variant, path, method, draft, query]) => (context) => {
    const made = materialize({ ...draft, withId: true }, context, false)
    const carried = made.carried === undefined ? [] : [made.carried]
    const body = Buffer.from(JSON.stringify(made.json))
    if (variant === 0) {
      if (query) {
        return request("path: query string", "200", `/v1/track?ajs_uid=1&x=%ZZ`, body, withKey(context), carried)
      }
      return request(
        "path: wrong path",
        tolerated.has(path) ? "any" : "4xx",
        path,
        body,
        withKey(context),
        carried
      )
    }
    const bodyless = method === "GET" || method === "HEAD" || method === "TRACE" || method === "OPTIONS"
    const headers = method === "OPTIONS"
      ? {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, authorization"
      }
      : withKey(context)
    return request(
      `method: ${method} /v1/track`,
      method === "OPTIONS" ? "any" : "4xx",
      "/v1/track",
      bodyless ? undefined : body,
      headers,
      bodyless ? [] : carried,
      0,
      method
    )
  })

/** A request sent again, whole, as a client retries one whose answer it did not get: REFERENCE §2's dedupe drops it. */
const retry: fc.Arbitrary<Maker> = fc.nat().map((pick) => (context) => {
  const earlier = context.recall(pick)
  if (earlier === undefined) {
    return request("retry (nothing yet)", "4xx", "/v1/track", Buffer.from("{}"), withKey(context), [])
  }
  return { ...earlier, label: "retry of an earlier request" }
})

const raws = [
  "garbage request line",
  "two content-lengths",
  "content-length and chunked",
  "chunked",
  "bad chunk size",
  "header over 16 KB",
  "HTTP/1.0 without host",
  "LF line ends",
  "folded header",
  "HTTP/2 preface",
  "expect 100-continue",
  "absolute URI",
  "NUL in header",
  "short content-length",
  "invalid header name"
] as const

/** Bytes no HTTP library would send: malformed framing, odd versions, headers past Node's limits. */
const raw: fc.Arbitrary<Maker> = fc.tuple(fc.constantFrom(...raws), draftOf("track")).map(
  ([variant, draft]) => (context): RawCase => {
    const made = materialize({ ...draft, withId: true }, context, false)
    const carried = made.carried === undefined ? [] : [made.carried]
    const body = Buffer.from(JSON.stringify(made.json))
    const auth = `Authorization: ${basic(context.writeKey)}`
    const head = (lines: ReadonlyArray<string>, eol = "\r\n") => Buffer.from(`${lines.join(eol)}${eol}${eol}`)
    const post = (extra: ReadonlyArray<string>, eol = "\r\n") =>
      head(["POST /v1/track HTTP/1.1", "Host: 127.0.0.1", auth, "Content-Type: application/json", ...extra], eol)
    const chunked = (...chunks: ReadonlyArray<Buffer | string>) =>
      Buffer.concat([post(["Transfer-Encoding: chunked"]), ...chunks.map((chunk) => Buffer.from(chunk))])
    const make = (expect: Expect, bytes: Buffer, keep = carried): RawCase => ({
      kind: "raw",
      label: `raw: ${variant}`,
      expect,
      bytes,
      carried: keep,
      anonymous: 0
    })
    switch (variant) {
      case "garbage request line":
        return make("4xx", Buffer.from("GARBAGE\r\n\r\n"), [])
      case "two content-lengths":
        return make(
          "4xx",
          Buffer.concat([
            post([`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`]),
            body,
            Buffer.from(" ")
          ])
        )
      case "content-length and chunked":
        return make(
          "4xx",
          Buffer.concat([
            post([`Content-Length: ${body.length + 20}`, "Transfer-Encoding: chunked"]),
            Buffer.from(`${body.length.toString(16)}\r\n`),
            body,
            Buffer.from("\r\n0\r\n\r\n")
          ])
        )
      case "chunked": {
        const half = Math.floor(body.length / 2)
        return make(
          "200",
          chunked(
            `${half.toString(16)}\r\n`,
            body.subarray(0, half),
            `\r\n${(body.length - half).toString(16)}\r\n`,
            body.subarray(half),
            "\r\n0\r\n\r\n"
          )
        )
      }
      case "bad chunk size":
        return make("4xx", chunked("zz\r\n", body, "\r\n0\r\n\r\n"))
      case "header over 16 KB":
        return make(
          "4xx",
          Buffer.concat([post([`X-Big: ${"b".repeat(20_000)}`, `Content-Length: ${body.length}`]), body])
        )
      case "HTTP/1.0 without host":
        return make("4xx", Buffer.from("GET /v1/track HTTP/1.0\r\n\r\n"), [])
      case "LF line ends":
        return make("any", Buffer.concat([post([`Content-Length: ${body.length}`], "\n"), body]))
      case "folded header":
        return make("any", Buffer.concat([post([`Content-Length: ${body.length}`, "X-Folded: one", " two"]), body]))
      case "HTTP/2 preface":
        return make("4xx", Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), [])
      case "expect 100-continue":
        return make("200", Buffer.concat([post([`Content-Length: ${body.length}`, "Expect: 100-continue"]), body]))
      case "absolute URI":
        return make(
          "any",
          Buffer.concat([
            head([
              `POST http://127.0.0.1/v1/track HTTP/1.1`,
              "Host: 127.0.0.1",
              auth,
              `Content-Length: ${body.length}`
            ]),
            body
          ])
        )
      case "NUL in header":
        return make("4xx", Buffer.concat([post([`Content-Length: ${body.length}`, "X-Nul: a\u0000b"]), body]))
      case "short content-length":
        return make("4xx", Buffer.concat([post([`Content-Length: ${body.length - 3}`]), body]))
      case "invalid header name":
        return make("4xx", Buffer.concat([post([`Content-Length: ${body.length}`, "Bad Header: x"]), body]))
    }
  }
)

/** The operational routes and the browser settings endpoint (REFERENCE §7). */
const operational: fc.Arbitrary<Maker> = fc.tuple(fc.nat(6), fc.string({ maxLength: 30 })).map(
  ([variant, noise]) => (context) => {
    const paths = [
      "/healthz",
      "/readyz",
      "/metrics",
      `/v1/projects/${context.writeKey}/settings`,
      `/v1/projects/${encodeURIComponent(noise)}/settings`,
      "/console",
      "/console/../admin/sources"
    ]
    const expect: Expect = variant === 0 || variant === 2 || variant === 3 ? "200" : "any"
    return request(
      `route: ${
        ["healthz", "readyz", "metrics", "settings", "settings of a random key", "console", "console dot-dot"][variant]
      }`,
      expect,
      paths[variant]!,
      undefined,
      {},
      [],
      0,
      "GET"
    )
  }
)

export { auth, headers, methodsAndPaths, operational, raw, retry }

export type { FuzzContext }
