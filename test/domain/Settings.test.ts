import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { decodeWithIssues } from "../../src/domain/Issues.js"
import { SourceConfig, WebhookSettings } from "../../src/domain/Settings.js"

const decodeSettings = decodeWithIssues(WebhookSettings)
const endpoint = (url: string, headers?: Record<string, string>) => (headers === undefined ? { url } : { url, headers })

const rejected = (input: unknown) => {
  const result = decodeSettings(input)
  if (result._tag === "Success") throw new Error(`expected a rejection of ${JSON.stringify(input)}`)
  return result.failure
}

describe("WebhookSettings (REFERENCE §1)", () => {
  it("accepts 1 to 5 endpoints with static headers and a secret", () => {
    const settings = {
      enabled: true,
      sharedSecret: "s3cret",
      endpoints: [
        endpoint("https://example.com/hook?x=1", { Authorization: "Bearer abc", "X-Team": "growth" }),
        endpoint("http://example.org:8080/a")
      ]
    }
    expect(Result.getOrThrow(decodeSettings(settings))).toStrictEqual(settings)
  })

  it("refuses no endpoints and more than five", () => {
    expect(rejected({ enabled: true, endpoints: [] })).toStrictEqual([
      { path: "endpoints", message: "must hold 1 to 5 endpoints (got 0)" }
    ])
    const six = Array.from({ length: 6 }, (_, i) => endpoint(`https://example.com/${i}`))
    expect(rejected({ enabled: true, endpoints: six })).toStrictEqual([
      { path: "endpoints", message: "must hold 1 to 5 endpoints (got 6)" }
    ])
  })

  it.each([
    "example.com/hook",
    "/relative",
    "ftp://example.com/x",
    "javascript:alert(1)",
    "mailto:a@example.com",
    "http://",
    ""
  ])("refuses the URL %j, naming the field", (url) => {
    expect(rejected({ enabled: true, endpoints: [endpoint(url)] })).toStrictEqual([
      { path: "endpoints[0].url", message: "must be an absolute http: or https: URL" }
    ])
  })

  it.each(["Bad Header", "X(1)", "", "ünicode"])("refuses the header name %j", (name) => {
    const issues = rejected({ enabled: true, endpoints: [endpoint("https://example.com", { [name]: "v" })] })
    expect(issues).toHaveLength(1)
    expect(issues[0]!.path).toBe(`endpoints[0].headers.${name}`)
    expect(issues[0]!.message).toBe("must be a valid HTTP header name (an RFC 9110 token)")
  })

  it.each(["a\r\nInjected: 1", "a\nb", "a\rb"])("refuses a header value with CR/LF %j", (value) => {
    expect(rejected({ enabled: true, endpoints: [endpoint("https://example.com", { "X-A": value })] })).toStrictEqual([
      { path: "endpoints[0].headers.X-A", message: "must not contain CR, LF or NUL characters" }
    ])
  })

  it.each(["User-Agent", "content-type", "CONTENT-LENGTH", "Host", "transfer-encoding", "X-Signature"])(
    "refuses a static header overriding %s",
    (name) => {
      expect(rejected({ enabled: true, endpoints: [endpoint("https://example.com", { [name]: "v" })] }))
        .toStrictEqual([{
          path: `endpoints[0].headers.${name}`,
          message: `the header ${name} is set by hookrelay and cannot be overridden`
        }])
    }
  )

  it("names the endpoint index of the bad entry", () => {
    const issues = rejected({
      enabled: true,
      endpoints: [endpoint("https://ok.example.com"), endpoint("nope"), endpoint("https://x.example.com")]
    })
    expect(issues.map((issue) => issue.path)).toStrictEqual(["endpoints[1].url"])
  })

  it("requires enabled to be a boolean", () => {
    expect(rejected({ enabled: "yes", endpoints: [endpoint("https://example.com")] })[0]!.path).toBe("enabled")
  })

  it("says what a field expected and what it got, and that a missing one is missing", () => {
    expect(rejected({ enabled: "yes", endpoints: [endpoint("https://example.com")] })).toStrictEqual([
      { path: "enabled", message: "Expected boolean, actual \"yes\"" }
    ])
    expect(rejected({ endpoints: [endpoint("https://example.com")] })).toStrictEqual([
      { path: "enabled", message: "is missing" }
    ])
    expect(rejected({ enabled: true, endpoints: [endpoint("https://example.com")], signing: "rsa" })).toStrictEqual([
      { path: "signing", message: "must be \"segment\", \"standard\" or \"both\"" }
    ])
  })

  it("reports one refusal of a field at a time: a number that is not whole is not also out of range", () => {
    const circuit = (failureThreshold: number) => ({
      enabled: true,
      endpoints: [{ url: "https://example.com", circuit: { failureThreshold } }]
    })
    expect(rejected(circuit(0.5))).toStrictEqual([
      { path: "endpoints[0].circuit.failureThreshold", message: "Expected an integer, actual 0.5" }
    ])
    expect(rejected(circuit(0)).map((issue) => issue.path)).toStrictEqual(["endpoints[0].circuit.failureThreshold"])
  })
})

describe("SourceConfig", () => {
  const decodeSource = decodeWithIssues(SourceConfig)
  it("accepts a source without a destination", () => {
    expect(decodeSource({ id: "web-1", writeKey: "wk_123" })._tag).toBe("Success")
  })
  it("refuses an id with spaces and a write key with a colon", () => {
    const result = decodeSource({ id: "my source", writeKey: "a:b" })
    expect(result._tag === "Failure" && result.failure.map((issue) => issue.path)).toStrictEqual(["id", "writeKey"])
  })
  it("refuses a write key for its length before its characters", () => {
    const result = decodeSource({ id: "web-1", writeKey: " ".repeat(300) })
    expect(result._tag === "Failure" && result.failure).toStrictEqual([
      { path: "writeKey", message: "must be 1 to 256 characters" }
    ])
  })
})
