import { Analytics } from "@segment/analytics-node"
import { Agent, createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { inspect } from "node:util"

/**
 * Load as an application makes it: `@segment/analytics-node`, unchanged, tracking at a steady rate against one or more
 * hosts, with every answer it got and every message it gave up on recorded; and a round-robin balancer in front of
 * replicas, as a deployment puts them behind one address.
 */

export interface SegmentLoad {
  /** Every message id tracked, with the time (epoch ms) it was handed to the client. */
  readonly sent: Map<string, number>
  /** How many HTTP answers of each status the clients got (retries included). */
  readonly statuses: Map<number, number>
  /** Each answer: when, its status, and the message ids of its batch. */
  readonly answers: Array<{ readonly at: number; readonly status: number; readonly messageIds: ReadonlyArray<string> }>
  /** Messages a client gave up on (its callback's error). */
  readonly failed: Array<{ readonly messageId: string; readonly reason: string }>
  /** Stops tracking, then flushes and closes every client (waiting up to `timeoutMillis` for their retries). */
  readonly stop: (timeoutMillis?: number) => Promise<void>
}

export const startSegmentLoad = (options: {
  readonly hosts: ReadonlyArray<string>
  readonly writeKey: string
  /** Messages per second over all hosts, taken in turn. */
  readonly perSecond: number
  readonly prefix: string
}): SegmentLoad => {
  const sent = new Map<string, number>()
  const statuses = new Map<number, number>()
  const answers: Array<{ at: number; status: number; messageIds: ReadonlyArray<string> }> = []
  const failed: Array<{ messageId: string; reason: string }> = []
  const clients = options.hosts.map((host) => {
    const analytics = new Analytics({
      writeKey: options.writeKey,
      host,
      path: "/v1/batch",
      flushAt: 10,
      flushInterval: 200,
      // The defaults: up to 10 retries with backoff from 500 ms, on 5xx, 429 and connection errors.
      maxRetries: 10
    })
    analytics.on("http_response", (response) => {
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      const batch = (JSON.parse(response.body) as { batch: ReadonlyArray<{ messageId: string }> }).batch
      answers.push({ at: Date.now(), status: response.status, messageIds: batch.map((message) => message.messageId) })
    })
    return analytics
  })
  const started = Date.now()
  let sending = true
  let count = 0
  const loop = (async () => {
    while (sending) {
      const messageId = `${options.prefix}-${count}`
      const analytics = clients[count % clients.length]!
      sent.set(messageId, Date.now())
      analytics.track({ userId: `user-${count % 50}`, event: "Load", messageId, properties: { n: count } }, (error) => {
        if (error !== undefined) failed.push({ messageId, reason: inspect(error, { depth: 3 }) })
      })
      count++
      // On schedule from the start, so that a slow tick does not lower the rate.
      const next = started + (count * 1000) / options.perSecond
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())))
    }
  })()
  return {
    sent,
    statuses,
    answers,
    failed,
    stop: async (timeoutMillis = 20_000) => {
      sending = false
      await loop
      await Promise.all(clients.map((analytics) => analytics.closeAndFlush({ timeout: timeoutMillis })))
    }
  }
}

type Headers = Record<string, string | Array<string> | undefined>

/** The headers a proxy passes on: not those of one connection, nor the host it was addressed as. */
const withoutHopHeaders = (headers: Headers): Record<string, string | Array<string>> => {
  const kept: Record<string, string | Array<string>> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !["host", "connection", "keep-alive", "transfer-encoding"].includes(name)) {
      kept[name] = value
    }
  }
  return kept
}

export interface Balancer {
  readonly url: string
  /** Requests answered 502: the replica took the request and died before answering. */
  readonly badGateways: () => number
  readonly close: () => Promise<void>
}

/**
 * A loopback HTTP balancer over `backends` (base URLs), round robin. A backend that refuses the connection is skipped
 * for a second and the request goes to the next (nothing reached it); one that drops the connection after taking the
 * request is answered 502, as proxies do for a POST, and the client retries.
 */
export const startBalancer = (backends: ReadonlyArray<string>): Promise<Balancer> =>
  new Promise((resolve, reject) => {
    const agent = new Agent({ keepAlive: true })
    const downUntil = new Map<string, number>()
    let turn = 0
    let badGateways = 0
    const forward = (
      backend: string,
      method: string,
      path: string,
      headers: Headers,
      body: Buffer
    ) =>
      new Promise<{ status: number; headers: Headers; body: Buffer }>(
        (done, fail) => {
          const outgoing = httpRequest(`${backend}${path}`, { method, headers, agent }, (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on(
              "end",
              () => done({ status: response.statusCode ?? 502, headers: response.headers, body: Buffer.concat(chunks) })
            )
            response.on("error", fail)
          })
          outgoing.on("error", fail)
          outgoing.end(body)
        }
      )
    const server: Server = createServer((incoming, response) => {
      const chunks: Array<Buffer> = []
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
      const answer = async () => {
        const body = Buffer.concat(chunks)
        const headers = withoutHopHeaders(incoming.headers)
        for (let tries = 0; tries < backends.length; tries++) {
          const backend = backends[turn++ % backends.length]!
          if ((downUntil.get(backend) ?? 0) > Date.now()) continue
          try {
            const reply = await forward(backend, incoming.method ?? "GET", incoming.url ?? "/", headers, body)
            response.writeHead(reply.status, withoutHopHeaders(reply.headers)).end(reply.body)
            return
          } catch (error) {
            if ((error as { code?: unknown }).code === "ECONNREFUSED") {
              downUntil.set(backend, Date.now() + 1000)
              continue
            }
            badGateways++
            response.writeHead(502).end()
            return
          }
        }
        response.writeHead(503).end()
      }
      incoming.on("end", () => void answer())
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        badGateways: () => badGateways,
        close: () =>
          new Promise((done) => {
            agent.destroy()
            server.closeAllConnections()
            server.close(() => done())
          })
      }))
  })
