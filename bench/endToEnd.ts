/**
 * End-to-end benchmark (issue: the server): a load generator posts `/v1/batch` (100 messages a
 * request) to the hookrelay server — a real `src/main.ts` process on SQLite, then on PostgreSQL
 * when DATABASE_URL is set — which delivers to a loopback receiver in a third process. Reports
 * accepted and delivered messages/s, ingest→receipt p50/p99, the server's peak RSS, and the accept
 * latency p99 at a steady 1 000 messages/s. The same run POSTs the same delivered bodies straight
 * to the same receiver with undici as the baseline.
 *
 *   npx tsx bench/endToEnd.ts [--messages 50000]
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agent } from "undici"
import { freePort } from "../test/support/serverProcess.js"
import { mb, repoRoot, sleep, startSink, waitFor, writeResults } from "./support/processes.js"

const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}

const totalMessages = arg("messages", 50_000)
const batchSize = 100
const senders = 8
const writeKey = "wk_bench_end_to_end"

const message = (run: string, i: number) => ({
  type: "track",
  userId: `user-${i % 1000}`,
  event: "Order Completed",
  messageId: `${run}-${i}`,
  properties: { orderId: `order-${i}`, revenue: 12.5, currency: "EUR" },
  context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } }
})

const percentile = (values: Array<number>, p: number) => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

const startServer = async (env: Record<string, string>) => {
  const port = await freePort()
  const child = spawn(process.execPath, [
    ...(process.env.SERVER_NODE_OPTIONS ?? "").split(" ").filter(Boolean),
    "--import",
    "tsx",
    join(repoRoot, "src/main.ts")
  ], {
    cwd: repoRoot,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const url = `http://127.0.0.1:${port}`
  await waitFor(
    async () => {
      try {
        return (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok
      } catch {
        return false
      }
    },
    30_000,
    50
  )
  const peakRss = () => {
    const status = readFileSync(`/proc/${child.pid}/status`, "utf8")
    return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
  }
  const stop = () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
    })
  return { url, peakRss, stop }
}

const post = async (agent: Agent, url: string, body: string) => {
  const started = performance.now()
  const response = await agent.request({
    origin: url,
    path: "/v1/batch",
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`
    },
    body
  })
  await response.body.dump()
  if (response.statusCode !== 200) throw new Error(`ingest answered ${response.statusCode}`)
  return performance.now() - started
}

const runServer = async (label: string, storeEnv: Record<string, string>, sinkUrl: string) => {
  const sink = await startSink({ SINK_RECEIPTS: "1" })
  const directory = mkdtempSync(join(tmpdir(), "hookrelay-e2e-bench-"))
  const config = join(directory, "config.json")
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{ id: "bench", writeKey, webhooks: { enabled: true, endpoints: [{ url: `${sink.url}/hook` }] } }]
    })
  )
  const server = await startServer({
    HOOKRELAY_CONFIG: config,
    HOOKRELAY_DATA_DIR: join(directory, "data"),
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
    DATABASE_URL: "",
    ...storeEnv
  })
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    // Throughput: every sender posts batches back to back.
    const run = `${label}-${Date.now()}`
    const sentAt = new Map<string, number>()
    const bodies = Array.from({ length: totalMessages / batchSize }, (_, b) => {
      const batch = Array.from({ length: batchSize }, (_, k) => message(run, b * batchSize + k))
      return { ids: batch.map((m) => m.messageId), body: JSON.stringify({ batch }) }
    })
    let next = 0
    const started = performance.now()
    await Promise.all(Array.from({ length: senders }, async () => {
      while (next < bodies.length) {
        const { body, ids } = bodies[next++]!
        const at = performance.timeOrigin + performance.now()
        for (const id of ids) sentAt.set(id, at)
        await post(agent, server.url, body)
      }
    }))
    const acceptSeconds = (performance.now() - started) / 1000
    await waitFor(async () => (await sink.stats()).distinct >= totalMessages, 600_000, 100)
    const deliverSeconds = (performance.now() - started) / 1000
    const stats = await sink.stats()
    const latencies = Object.entries(stats.receipts ?? {}).map(([id, at]) => at - (sentAt.get(id) ?? at))

    // Steady load: 1 000 messages/s as 100 requests/s of 10 messages, for 10 s.
    const steadyLatencies: Array<number> = []
    const steadyRun = `${run}-steady`
    const steadyStart = performance.now()
    const pending: Array<Promise<void>> = []
    for (let i = 0; i < 1000; i++) {
      const due = steadyStart + i * 10
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      const batch = Array.from({ length: 10 }, (_, k) => message(steadyRun, i * 10 + k))
      pending.push(post(agent, server.url, JSON.stringify({ batch })).then((ms) => void steadyLatencies.push(ms)))
    }
    await Promise.all(pending)

    return {
      acceptedPerSecond: totalMessages / acceptSeconds,
      deliveredPerSecond: totalMessages / deliverSeconds,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      acceptP99AtSteadyMs: percentile(steadyLatencies, 99),
      acceptP50AtSteadyMs: percentile(steadyLatencies, 50),
      serverPeakRssBytes: server.peakRss(),
      duplicates: stats.requests - stats.distinct
    }
  } finally {
    await agent.close()
    await server.stop()
    await sink.stop()
    rmSync(directory, { recursive: true, force: true })
    void sinkUrl
  }
}

/** The baseline: the same kind of bodies POSTed straight to a receiver with undici, 16 at a time. */
const rawBaseline = async () => {
  const sink = await startSink()
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    const bodies = Array.from(
      { length: totalMessages },
      (_, i) => JSON.stringify({ version: 1, ...message("raw", i), timestamp: new Date(0).toISOString() })
    )
    let next = 0
    const started = performance.now()
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < bodies.length) {
        const response = await agent.request({
          origin: sink.url,
          path: "/hook",
          method: "POST",
          headers: { "content-type": "application/json", "user-agent": "hookrelay/1.0" },
          body: bodies[next++]!
        })
        await response.body.dump()
      }
    }))
    return totalMessages / ((performance.now() - started) / 1000)
  } finally {
    await agent.close()
    await sink.stop()
  }
}

const main = async () => {
  const raw = await rawBaseline()
  const sqlite = await runServer("sqlite", {}, "")
  const pg = process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === ""
    ? undefined
    : await runServer("pg", { DATABASE_URL: process.env.DATABASE_URL }, "")
  const row = (name: string, r: Awaited<ReturnType<typeof runServer>>) =>
    `| ${name} | ${Math.round(r.acceptedPerSecond)} | ${Math.round(r.deliveredPerSecond)} | ${
      (r.deliveredPerSecond / raw).toFixed(2)
    }× | ${Math.round(r.latencyP50Ms)} | ${Math.round(r.latencyP99Ms)} | ${r.acceptP99AtSteadyMs.toFixed(1)} | ${
      mb(r.serverPeakRssBytes)
    } | ${r.duplicates} |`
  const markdown = `# End-to-end benchmark

${new Date().toISOString()}, Node ${process.version}. Produced by \`npm run bench\` (\`bench/endToEnd.ts\`).

${totalMessages} track messages posted to \`/v1/batch\` (${batchSize} a request, ${senders} senders at once) to a
\`src/main.ts\` process, delivered to a loopback receiver in a third process. Delivered/s counts from the first
request to the last receipt. Latency is from posting a message's batch to its receipt. Accept p99 is measured
afterwards at a steady 1 000 messages/s (100 requests/s of 10 messages). Baseline: the same number of bodies
POSTed straight to a receiver with undici, 16 at a time: ${Math.round(raw)} messages/s.

| store | accepted msg/s | delivered msg/s | delivered / raw | p50 ms | p99 ms | accept p99 ms at 1 000/s | server peak RSS MB | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${row("SQLite", sqlite)}
${pg === undefined ? "" : row("PostgreSQL", pg)}

Targets: ≥ 50 000 messages/s accepted on SQLite; delivered ≥ 0.35× raw; accept p99 < 10 ms at 1 000 messages/s.
`
  writeResults("end-to-end", markdown, { totalMessages, batchSize, senders, raw, sqlite, pg })
  console.log(markdown)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
