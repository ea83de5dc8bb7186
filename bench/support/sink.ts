/**
 * A webhook receiver for benchmarks, meant to run in its own process (`fork`): answers every POST
 * with 200 once its body is read, counts requests and distinct message ids, and reports to its
 * parent over IPC. Loopback only.
 *
 *   { type: "ready", port }              sent once listening
 *   { type: "stats", receipts? } → { type: "stats", requests, distinct, firstAt, lastAt, cpuMicros, receipts? }
 *
 * Receipt times (SINK_RECEIPTS=1) are sent only when asked for: the end-to-end benchmark polls the counts every 100 ms
 * while the server delivers, and 50 000 receipts serialized at each poll loaded the machine the server shares.
 *
 * With SINK_COUNT_IDS=1 each body is parsed as JSON (a fuzzed message id may hold quotes or any character) and every
 * message id's receipts are counted, delete notifications (they carry no id) apart:
 *   { type: "counts" } → { type: "counts", counts: { [messageId]: receipts }, deletes, unparsed }
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const delayMillis = Number(process.env.SINK_DELAY_MS ?? 0)
let requests = 0
let firstAt = 0
let lastAt = 0
const seen = new Set<string>()
const receipts = new Map<string, number>()
const keepReceipts = process.env.SINK_RECEIPTS === "1"
const countIds = process.env.SINK_COUNT_IDS === "1"
const counts = new Map<string, number>()
let deletes = 0
let unparsed = 0

const count = (body: string) => {
  try {
    const message = JSON.parse(body) as { type?: unknown; messageId?: unknown }
    if (message.type === "delete") deletes += 1
    else if (typeof message.messageId === "string") {
      counts.set(message.messageId, (counts.get(message.messageId) ?? 0) + 1)
    } else unparsed += 1
  } catch {
    unparsed += 1
  }
}

const messageIdOf = (body: string): string | undefined => {
  const match = /"messageId":"([^"]*)"/.exec(body)
  return match === null ? undefined : match[1]
}

const server = createServer((request, response) => {
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const now = performance.timeOrigin + performance.now()
    requests += 1
    if (firstAt === 0) firstAt = now
    lastAt = now
    const text = Buffer.concat(chunks).toString("utf8")
    if (countIds) count(text)
    const id = messageIdOf(text)
    if (id !== undefined) {
      seen.add(id)
      if (keepReceipts && !receipts.has(id)) receipts.set(id, now)
    }
    const answer = () => response.writeHead(200, { "content-type": "text/plain" }).end("ok")
    if (delayMillis > 0) setTimeout(answer, delayMillis)
    else answer()
  })
})
server.keepAliveTimeout = 30_000

server.listen(Number(process.env.SINK_PORT ?? 0), "127.0.0.1", () => {
  process.send?.({ type: "ready", port: (server.address() as AddressInfo).port })
})

process.on("message", (message: { type: string; receipts?: boolean }) => {
  if (message.type === "counts") {
    process.send?.({ type: "counts", counts: Object.fromEntries(counts), deletes, unparsed })
  } else if (message.type === "stats") {
    process.send?.({
      type: "stats",
      requests,
      distinct: seen.size,
      firstAt,
      lastAt,
      cpuMicros: (({ system, user }) => user + system)(process.cpuUsage()),
      receipts: keepReceipts && message.receipts === true ? Object.fromEntries(receipts) : undefined
    })
  } else if (message.type === "reset") {
    requests = 0
    firstAt = 0
    lastAt = 0
    seen.clear()
    receipts.clear()
    counts.clear()
    deletes = 0
    unparsed = 0
  } else if (message.type === "stop") {
    server.close()
    server.closeAllConnections()
    process.exit(0)
  }
})
process.on("disconnect", () => process.exit(0))
