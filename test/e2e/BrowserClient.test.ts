import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, readFileSync } from "node:fs"
import type { ServerResponse } from "node:http"
import * as Path from "node:path"
import type { Browser } from "playwright-core"
import { type ReceivedRequest, repoRoot, startServer, tlsFixture, waitUntil } from "../delivery/support.js"
import { type App, startApp } from "../support/app.js"
import { chromiumAvailable, launchChromium } from "../support/chromium.js"
import { basic, pollUntil, signatureOf } from "../support/http.js"

/**
 * The real analytics.js (`@segment/analytics-next`, its published browser bundle, unchanged) on a web page in headless
 * Chromium, on an origin of its own, pointed at hookrelay as a user points it at any Segment-compatible host (its
 * `Segment.io` settings: `apiHost`, `protocol`). It posts each message to `/v1/<first letter of the type>` with Basic
 * auth, so the browser asks first (a CORS preflight): every call must arrive at the webhook once, signed, with the
 * REFERENCE §3 body, and the browser must read each answer as a 200 (a failed request is sent again by analytics.js).
 */

const hasChromium = chromiumAvailable("the analytics.js browser test")

const writeKey = "wk_analytics_js_e2e_01"
const sharedSecret = "analytics-js-e2e-shared-secret"
const bundleDirectory = Path.join(repoRoot, "node_modules/@segment/analytics-next/dist/umd")
const isoWithMillis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** The customer's web page and the library's bundle, served from another origin than hookrelay's. */
const servePage = (request: ReceivedRequest, response: ServerResponse) => {
  if (request.url === "/") {
    response.writeHead(200, { "content-type": "text/html" })
    return void response.end("<!doctype html><html><body><script src=\"/bundle/index.js\"></script></body></html>")
  }
  const file = Path.join(bundleDirectory, Path.basename(request.url))
  if (request.url.startsWith("/bundle/") && existsSync(file)) {
    response.writeHead(200, { "content-type": "text/javascript" })
    return void response.end(readFileSync(file))
  }
  response.writeHead(404).end()
}

/** How the page points analytics.js at hookrelay. */
type Pointing =
  /** Settings given inline (the library then asks no CDN), with hookrelay as the `Segment.io` host. */
  | { readonly _tag: "inline"; readonly apiHost: string }
  /** hookrelay as the library's CDN: it loads its settings from `/v1/projects/<writeKey>/settings`. */
  | { readonly _tag: "cdnURL"; readonly cdnURL: string }
  /** As `cdnURL`, in the library's batching mode: it posts batches to `https://<apiHost>/b`, always over HTTPS. */
  | { readonly _tag: "batching"; readonly cdnURL: string }

/**
 * What the page runs (as text: the tests are compiled without DOM types): the six calls, awaited one by one. No
 * persistence, so nothing is left for a later page.
 */
const pageScript = (pointing: Pointing) => {
  const settings = pointing._tag === "inline"
    ? {
      writeKey,
      cdnSettings: {
        integrations: { "Segment.io": { apiKey: writeKey, apiHost: pointing.apiHost, protocol: "http" } },
        metrics: { sampleRate: 0 }
      }
    }
    : { writeKey, cdnURL: pointing.cdnURL }
  const options = {
    disableClientPersistence: true,
    // A batch of all six: sent when the sixth call is made.
    ...(pointing._tag === "batching" &&
      {
        integrations: {
          "Segment.io": { deliveryStrategy: { strategy: "batching", config: { size: 6, timeout: 10_000 } } }
        }
      })
  }
  return `(async () => {
  const [analytics] = await window.AnalyticsNext.AnalyticsBrowser.load(
    ${JSON.stringify(settings)},
    ${JSON.stringify(options)}
  )
  const sent = [
    await analytics.identify("user-1", { email: "ada@example.com", plan: "pro" }),
    await analytics.track("Order Completed", { orderId: "o-1", revenue: 39.95 }),
    await analytics.page("Docs", "Pricing", { path: "/pricing" }),
    await analytics.screen("Checkout", { step: 2 }),
    await analytics.group("acme", { name: "Acme Inc" }),
    await analytics.alias("user-2", "user-1")
  ]
  return sent.map((context) => context.event.messageId)
})()`
}

/**
 * A TLS-terminating proxy in front of hookrelay, as production runs it: forwards each request with
 * `X-Forwarded-Host` and `X-Forwarded-Proto: https`. Its certificate is the tests' self-signed one.
 */
const startTlsProxy = (target: string) =>
  startServer((request, response) => {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || ["host", "connection", "content-length", "transfer-encoding"].includes(name)) continue
      headers[name] = Array.isArray(value) ? value.join(", ") : value
    }
    headers["x-forwarded-host"] = request.headers.host ?? ""
    headers["x-forwarded-proto"] = "https"
    fetch(`${target}${request.url}`, {
      method: request.method,
      headers,
      ...(request.body.length > 0 && { body: request.body })
    }).then(async (answer) => {
      const body = Buffer.from(await answer.arrayBuffer())
      const answerHeaders: Record<string, string> = {}
      answer.headers.forEach((value, name) => {
        if (name !== "content-length" && name !== "content-encoding" && name !== "transfer-encoding") {
          answerHeaders[name] = value
        }
      })
      response.writeHead(answer.status, answerHeaders).end(body)
    }, () => response.writeHead(502).end())
  }, { tls: tlsFixture })

/** One message as analytics.js put it on the wire. */
interface SentMessage {
  readonly type: string
  readonly messageId: string
  readonly timestamp: string
  readonly sentAt: string
  readonly anonymousId: string
  readonly userId?: string
  readonly context: Record<string, unknown>
  readonly [key: string]: unknown
}

/**
 * The REFERENCE §3 body for a message analytics.js sent: its event time skew-corrected with its own `sentAt` (REFERENCE §2),
 * the device's time kept as `originalTimestamp`, its context as it was; `writeKey`, `integrations` and `_metadata` are
 * the library's envelope and are not delivered.
 */
const expectedBody = (sent: SentMessage, receivedAt: string) => {
  const common = {
    version: 1,
    type: sent.type,
    messageId: sent.messageId,
    anonymousId: sent.anonymousId,
    timestamp: new Date(Date.parse(receivedAt) - (Date.parse(sent.sentAt) - Date.parse(sent.timestamp))).toISOString(),
    receivedAt,
    sentAt: sent.sentAt,
    originalTimestamp: sent.timestamp,
    context: sent.context
  }
  switch (sent.type) {
    case "identify":
      return { ...common, userId: sent.userId, traits: sent.traits }
    case "track":
      return { ...common, userId: sent.userId, event: sent.event, properties: sent.properties }
    case "page":
    case "screen":
      return {
        ...common,
        userId: sent.userId,
        name: sent.name,
        ...(sent.category !== undefined && { category: sent.category }),
        properties: sent.properties
      }
    case "group":
      return { ...common, userId: sent.userId, groupId: sent.groupId, traits: sent.traits }
    case "alias":
      return { ...common, "Previous ID": sent.previousId, "User ID": sent.userId }
    default:
      throw new Error(`unexpected type ${sent.type}`)
  }
}

const allDelivered = (app: App, messageIds: ReadonlyArray<string>) =>
  pollUntil(
    Effect.forEach(messageIds, (id) => app.relayMessages.messageJobs(id)),
    (jobs) => jobs.every((forMessage) => forMessage.length === 1 && forMessage[0]!.status === "delivered"),
    "every job is delivered"
  )

/**
 * A page on another site than hookrelay's (`localhost` for the page, 127.0.0.1 for hookrelay) makes the six calls;
 * resolves once every message is delivered, with what the browser sent and read. `behindTls`: the page reaches
 * hookrelay through `startTlsProxy`.
 */
const runPage = (pointing: (hookrelayUrl: string) => Pointing, options: { readonly behindTls?: boolean } = {}) =>
  Effect.gen(function*() {
    const receiver = yield* startServer((_request, response) => response.writeHead(200).end("ok"))
    const app = yield* startApp()
    yield* app.relaySources.putSource({
      id: "web",
      writeKey,
      webhooks: { enabled: true, sharedSecret, endpoints: [{ url: `${receiver.url}/hook` }] }
    })
    const hookrelayUrl = options.behindTls === true ? (yield* startTlsProxy(app.baseUrl)).url : app.baseUrl
    const pages = yield* startServer(servePage)
    const pageOrigin = `http://localhost:${pages.port}`
    const browser = yield* Effect.acquireRelease(
      Effect.promise(() => launchChromium(options.behindTls === true ? ["--ignore-certificate-errors"] : [])),
      (opened: Browser) => Effect.promise(() => opened.close())
    )
    const page = yield* Effect.promise(() => browser.newPage())

    // What the browser sent to hookrelay, what it read back, what failed, and whatever went elsewhere.
    const posts: Array<{ path: string; authorization: string | undefined; body: Record<string, unknown> }> = []
    const answers: Array<{ method: string; path: string; status: number }> = []
    const failures: Array<string> = []
    const elsewhere: Array<string> = []
    const pathOf = (url: string) => url.startsWith(hookrelayUrl) ? new URL(url).pathname : undefined
    page.on("request", (request) => {
      const path = pathOf(request.url())
      if (path === undefined) {
        if (!request.url().startsWith(pageOrigin)) elsewhere.push(request.url())
        return
      }
      if (request.method() !== "POST") return
      posts.push({ path, authorization: request.headers().authorization, body: request.postDataJSON() })
    })
    page.on("response", (response) => {
      const path = pathOf(response.url())
      if (path !== undefined) answers.push({ method: response.request().method(), path, status: response.status() })
    })
    page.on("requestfailed", (request) => failures.push(`${request.url()}: ${request.failure()?.errorText}`))

    yield* Effect.promise(() => page.goto(`${pageOrigin}/`))
    const messageIds = (yield* Effect.promise(() =>
      page.evaluate(pageScript(pointing(hookrelayUrl)))
    )) as ReadonlyArray<
      string
    >
    expect(messageIds).toHaveLength(6)
    yield* allDelivered(app, messageIds)
    yield* waitUntil(() => receiver.requests.length >= 6, "six deliveries")
    // Each message as it was sent: a batch's messages carry the batch's `sentAt` (REFERENCE §2: it applies to each).
    const sent = posts.flatMap(({ body }) =>
      Array.isArray(body.batch)
        ? (body.batch as Array<SentMessage>).map((message) => ({ ...message, sentAt: String(body.sentAt) }))
        : [body as unknown as SentMessage]
    )
    return { receiver, messageIds, posts, sent, answers, failures, elsewhere }
  })

/** The requests to hookrelay at `paths`, each read as a 200, and every message delivered once as REFERENCE §3 says. */
const expectDeliveredOnce = (
  run: Effect.Success<ReturnType<typeof runPage>>,
  paths: ReadonlyArray<string>
) => {
  const { answers, elsewhere, failures, messageIds, posts, receiver, sent } = run
  expect(failures).toStrictEqual([])
  expect(elsewhere).toStrictEqual([])
  expect(posts.map((post) => post.path)).toStrictEqual(paths)
  // With Basic auth: the browser asks first (a CORS preflight, which it does not report as a request of its own).
  expect(posts.every((post) => post.authorization === basic(writeKey))).toBe(true)
  expect(answers.filter((answer) => answer.method === "POST")).toStrictEqual(
    posts.map((post) => ({ method: "POST", path: post.path, status: 200 }))
  )
  expect(sent.map((message) => message.messageId)).toStrictEqual(messageIds)

  const sentById = new Map(sent.map((message) => [message.messageId, message]))
  expect(receiver.requests).toHaveLength(6)
  for (const request of receiver.requests) {
    const body = JSON.parse(request.body.toString("utf8")) as Record<string, unknown>
    const message = sentById.get(String(body.messageId))
    expect(message).toBeDefined()
    expect(String(body.receivedAt)).toMatch(isoWithMillis)
    expect(body).toStrictEqual(expectedBody(message!, String(body.receivedAt)))
    expect(request.headers["x-signature"]).toBe(signatureOf(sharedSecret, request.body))
  }
}

const oneRequestPerMessage = ["/v1/i", "/v1/t", "/v1/p", "/v1/s", "/v1/g", "/v1/a"]

describe.skipIf(!hasChromium)("analytics.js (@segment/analytics-next) in Chromium against hookrelay", () => {
  it.live("with its settings inline: identify, track, page, screen, group, alias arrive once each, signed", () =>
    Effect.gen(function*() {
      const run = yield* runPage((url) => ({ _tag: "inline", apiHost: `${new URL(url).host}/v1` }))
      expectDeliveredOnce(run, oneRequestPerMessage)
    }))

  it.live("with hookrelay as its CDN: the settings come from hookrelay and send everything back to it", () =>
    Effect.gen(function*() {
      const run = yield* runPage((url) => ({ _tag: "cdnURL", cdnURL: url }))
      expect(run.answers[0]).toStrictEqual({ method: "GET", path: `/v1/projects/${writeKey}/settings`, status: 200 })
      expectDeliveredOnce(run, oneRequestPerMessage)
    }))

  it.live("in batching mode behind a TLS proxy: the settings point at the proxy, one batch to /v1/b", () =>
    Effect.gen(function*() {
      const run = yield* runPage((url) => ({ _tag: "batching", cdnURL: url }), { behindTls: true })
      expect(run.answers[0]).toStrictEqual({ method: "GET", path: `/v1/projects/${writeKey}/settings`, status: 200 })
      expectDeliveredOnce(run, ["/v1/b"])
    }))
})
