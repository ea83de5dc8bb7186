import { Analytics } from "@segment/analytics-node"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { request } from "undici"
import { mountSmallDisk, type SmallDisk, startThrowawayPostgres, type ThrowawayPostgres } from "./faultStores.js"
import { basicAuth, freePort, repoRoot, testSecretKeys } from "./serverProcess.js"

/**
 * One store fault under load, from the outside: the real server (`src/main.ts`) on a store the run can take away — a
 * PostgreSQL cluster of its own, stopped and started again, or SQLite on a small tmpfs, filled and freed — while the
 * real analytics-node client sends a steady stream of `track` calls and a prober asks `/readyz` and the tracking API
 * every 100 ms. Then every message the server acknowledged must reach the webhook receiver.
 */
export interface FaultRunOptions {
  readonly store: "postgres" | "sqlite"
  /** How long the store stays away. */
  readonly outageMillis: number
  /** Load before the fault and after it, each. */
  readonly steadyMillis: number
  /** `track` calls a second from analytics-node. */
  readonly rate: number
  readonly pgPort?: number | undefined
  readonly log?: ((line: string) => void) | undefined
}

export interface FaultRunResult {
  readonly store: string
  readonly outageMillis: number
  readonly probes: { sent: number; answered: number; refused: number; hung: number; statuses: Record<string, number> }
  readonly messages: {
    sent: number
    accepted: number
    refusedByServer: number
    delivered: number
    duplicates: number
    lost: number
  }
  /** Status codes analytics-node got, by code. */
  readonly clientStatuses: Record<string, number>
  /** `/readyz` reasons seen while the store was away. */
  readonly readyReasons: Array<string>
  /** Log lines saying the store became unavailable / available again. */
  readonly outageLogLines: number
  readonly recoveryLogLines: number
  /** Every error the server logged, by message (how often each). */
  readonly errorLogs: Record<string, number>
  /** A few duplicated messages: when each copy arrived, in seconds from the store going away. */
  readonly duplicateArrivals: Array<Array<number>>
  /** The server process ran the whole time (never restarted). */
  readonly serverSurvived: boolean
}

const writeKey = "wk_store_faults_0123456789abcdef"
const adminToken = "admin-token-store-faults-0123456789"
const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

const startReceiver = async () => {
  const delivered = new Map<string, number>()
  /** When each message arrived, for the duplicates' story. */
  const arrivals = new Map<string, Array<number>>()
  const server: Server = createServer((incoming, response) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const id = /"messageId":"([^"]*)"/.exec(Buffer.concat(chunks).toString("utf8"))?.[1]
      if (id !== undefined) {
        delivered.set(id, (delivered.get(id) ?? 0) + 1)
        arrivals.set(id, [...(arrivals.get(id) ?? []), Date.now()])
      }
      response.writeHead(200).end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  return { url, delivered, arrivals, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const startServer = async (env: Record<string, string>) => {
  const port = await freePort()
  const { DATABASE_URL: _unset, ...inherited } = process.env
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
    cwd: repoRoot,
    env: { ...inherited, HOST: "127.0.0.1", PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  let exited = false
  child.once("exit", () => (exited = true))
  const url = `http://127.0.0.1:${port}`
  const startedAt = Date.now()
  while (true) {
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ready) break
    if (exited || Date.now() - startedAt > 90_000) {
      child.kill("SIGKILL")
      throw new Error(`the server did not become ready:\n${output}`)
    }
    await sleep(100)
  }
  return { url, child, output: () => output, exited: () => exited }
}

const errorLogs = (output: string): Record<string, number> => {
  const counts: Record<string, number> = {}
  for (const line of output.split("\n")) {
    if (!line.includes("ERROR")) continue
    let message = line.slice(0, 120)
    try {
      const parsed = JSON.parse(line) as { message?: unknown }
      message = String(Array.isArray(parsed.message) ? parsed.message[0] : parsed.message).slice(0, 120)
    } catch {
      // not JSON: its first characters
    }
    counts[message] = (counts[message] ?? 0) + 1
  }
  return counts
}

export const runStoreFault = async (options: FaultRunOptions): Promise<FaultRunResult> => {
  const log = options.log ?? (() => undefined)
  const root = mkdtempSync(Path.join(tmpdir(), "hookrelay-faults-"))
  const receiver = await startReceiver()
  let postgres: ThrowawayPostgres | undefined
  let disk: SmallDisk | undefined
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  try {
    const config = Path.join(root, "config.json")
    writeFileSync(
      config,
      JSON.stringify({
        sources: [{ id: "faults", writeKey, webhooks: { enabled: true, endpoints: [{ url: receiver.url }] } }]
      })
    )
    const env: Record<string, string> = {
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      HOOKRELAY_ADMIN_TOKEN: adminToken
    }
    if (options.store === "postgres") {
      postgres = startThrowawayPostgres(options.pgPort ?? 5499)
      env.DATABASE_URL = postgres.url
      env.HOOKRELAY_SECRET_KEYS = testSecretKeys
    } else {
      disk = mountSmallDisk("48m")
      env.HOOKRELAY_DATA_DIR = disk.directory
    }
    server = await startServer(env)
    const url = server.url
    log(`server ready at ${url} on ${options.store}`)

    // The prober: raw requests every 100 ms, counting answers, refusals and requests left open.
    const probes = { sent: 0, answered: 0, refused: 0, hung: 0, statuses: {} as Record<string, number> }
    const readyReasons = new Set<string>()
    let storeAway = false
    let probing = true
    const inflight: Array<Promise<void>> = []
    const probe = (path: string, method: string, body?: string) =>
      request(`${url}${path}`, {
        method,
        headers: { "content-type": "application/json", authorization: basicAuth(writeKey) },
        ...(body !== undefined && { body }),
        headersTimeout: 15_000,
        bodyTimeout: 15_000
      }).then(async (response) => {
        const text = await response.body.text()
        probes.answered += 1
        const key = `${method} ${path} ${response.statusCode}`
        probes.statuses[key] = (probes.statuses[key] ?? 0) + 1
        if (path === "/readyz" && storeAway && response.statusCode === 503) {
          readyReasons.add(String((JSON.parse(text) as { reason?: unknown }).reason))
        }
      }, (error: { code?: string }) => {
        if (error.code === "UND_ERR_HEADERS_TIMEOUT" || error.code === "UND_ERR_BODY_TIMEOUT") probes.hung += 1
        else probes.refused += 1
      })
    const prober = (async () => {
      let index = 0
      while (probing) {
        probes.sent += 1
        // The prober's own messages are not counted as accepted ones: they carry no message id the run tracks.
        inflight.push(
          index++ % 2 === 0
            ? probe("/readyz", "GET")
            : probe("/v1/track", "POST", JSON.stringify({ type: "track", userId: "probe", event: "Probe" }))
        )
        await sleep(100)
      }
    })()

    // The load: analytics-node, retrying 5xx with its own backoff (long enough to outlast the outage).
    const clientStatuses: Record<string, number> = {}
    const analytics = new Analytics({
      writeKey,
      host: url,
      flushAt: 50,
      flushInterval: 200,
      maxRetries: 12,
      maxTotalBackoffDuration: 120,
      httpRequestTimeout: 20_000
    })
    analytics.on("http_response", (response) => {
      const key = String(response.status)
      clientStatuses[key] = (clientStatuses[key] ?? 0) + 1
    })
    const accepted = new Set<string>()
    let refusedByServer = 0
    let sent = 0
    const callbacks: Array<Promise<void>> = []
    const send = (millis: number) =>
      (async () => {
        const until = Date.now() + millis
        const every = 1000 / options.rate
        while (Date.now() < until) {
          const messageId = `fault-${sent++}`
          callbacks.push(
            new Promise<void>((resolve) =>
              analytics.track({ userId: `user-${sent % 97}`, event: "Fault Test", messageId }, (error) => {
                if (error === undefined) accepted.add(messageId)
                else refusedByServer += 1
                resolve()
              })
            )
          )
          await sleep(every)
        }
      })()

    await send(options.steadyMillis)
    log(`taking the store away for ${options.outageMillis} ms`)
    storeAway = true
    const awayAt = Date.now()
    if (postgres !== undefined) postgres.stop()
    else disk!.fill()
    await send(options.outageMillis)
    if (postgres !== undefined) postgres.start()
    else disk!.free()
    storeAway = false
    log("store back")
    await send(options.steadyMillis)
    await analytics.closeAndFlush({ timeout: 180_000 })
    await Promise.all(callbacks)
    probing = false
    await prober
    await Promise.all(inflight)
    log(`client done: ${accepted.size} accepted of ${sent}`)

    // Every accepted message delivered, or a deadline.
    const drainUntil = Date.now() + 120_000
    while ([...accepted].some((id) => !receiver.delivered.has(id)) && Date.now() < drainUntil) await sleep(200)
    // Late duplicates: jobs whose outcome could not be written are delivered again once their lease lapses, so the
    // count waits until no job is pending or delivering any more.
    const settleUntil = Date.now() + 150_000
    while (Date.now() < settleUntil) {
      const backlog = await fetch(`${url}/admin/backlog`, { headers: { authorization: `Bearer ${adminToken}` } })
        .then((response) => response.json() as Promise<{ pending: number; delivering: number }>, () => undefined)
      if (backlog !== undefined && backlog.pending === 0 && backlog.delivering === 0) break
      await sleep(500)
    }
    await sleep(1_000)
    let delivered = 0
    let duplicates = 0
    let lost = 0
    for (const id of accepted) {
      const times = receiver.delivered.get(id) ?? 0
      if (times === 0) lost += 1
      else delivered += 1
      duplicates += Math.max(0, times - 1)
    }
    const output = server.output()
    if (process.env.FAULT_SERVER_LOG !== undefined) writeFileSync(process.env.FAULT_SERVER_LOG, output)
    return {
      store: options.store,
      outageMillis: options.outageMillis,
      probes,
      messages: { sent, accepted: accepted.size, refusedByServer, delivered, duplicates, lost },
      clientStatuses,
      readyReasons: [...readyReasons],
      outageLogLines: output.split("the store is unavailable").length - 1,
      recoveryLogLines: output.split("the store is available again").length - 1,
      duplicateArrivals: [...receiver.arrivals.values()].filter((times) => times.length > 1).slice(0, 5).map((times) =>
        times.map((at) => Math.round((at - awayAt) / 100) / 10)
      ),
      serverSurvived: !server.exited(),
      errorLogs: errorLogs(output)
    }
  } finally {
    if (server !== undefined && !server.exited()) {
      const gone = new Promise((resolve) => server!.child.once("exit", resolve))
      server.child.kill("SIGTERM")
      await Promise.race([gone, sleep(15_000)])
      server.child.kill("SIGKILL")
    }
    await receiver.close()
    postgres?.destroy()
    disk?.destroy()
    rmSync(root, { recursive: true, force: true })
  }
}
