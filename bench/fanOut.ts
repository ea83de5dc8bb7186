/**
 * Fan-out benchmark (issue: destinations): the same ingest and delivery with one destination and with three, on
 * SQLite, alternating in one run. A load generator posts `/v1/batch` (100 messages a request, 8 senders) to a server
 * process (`dist/main.js`, as `npm start` runs it); each destination delivers to a loopback receiver of its own. The
 * goals: CPU per delivered request with three destinations ≤ 1.1× one destination's, and ingest accepted/s ≥ 0.9×
 * (ingest writes one row per message whatever its number of destinations; the claim makes the other jobs).
 *
 *   npx tsx bench/fanOut.ts [--messages 50000] [--warm-up 5000] [--rounds 3]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Agent } from "undici"
import { arg, mb, type Sink, sleep, startSink, waitFor, writeResults } from "./support/processes.js"
import { buildServer, peakRssOf, processCpuMicros, startHookrelay } from "./support/servers.js"

const totalMessages = arg("messages", 50_000)
const warmUpMessages = arg("warm-up", 5_000)
const rounds = arg("rounds", 3)
const batchSize = 100
const senders = 8
const writeKey = "wk_bench_fan_out"

const message = (run: string, i: number) => ({
  type: "track",
  userId: `user-${i % 1000}`,
  event: "Order Completed",
  messageId: `${run}-${String(i).padStart(9, "0")}`,
  properties: { orderId: `order-${i}`, revenue: 12.5, currency: "EUR" },
  context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } }
})

/** POSTs `count` messages in batches from `senders` senders at once; a 503 is retried after its Retry-After. */
const postAll = async (agent: Agent, url: string, run: string, count: number) => {
  let next = 0
  const authorization = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`
  await Promise.all(Array.from({ length: senders }, async () => {
    while (next < count) {
      const first = next
      next += batchSize
      const batch = Array.from({ length: Math.min(batchSize, count - first) }, (_, k) => message(run, first + k))
      const body = JSON.stringify({ batch })
      for (;;) {
        const response = await agent.request({
          origin: url,
          path: "/v1/batch",
          method: "POST",
          headers: { "content-type": "application/json", authorization },
          body
        })
        await response.body.dump()
        if (response.statusCode === 200) break
        if (response.statusCode !== 503) throw new Error(`ingest answered ${response.statusCode}`)
        await sleep(Number(response.headers["retry-after"] ?? 1) * 1000)
      }
    }
  }))
}

const allReceived = (sinks: ReadonlyArray<Sink>, count: number) =>
  waitFor(async () => (await Promise.all(sinks.map((sink) => sink.stats()))).every((s) => s.distinct >= count), 600_000)

/** One server with `destinations` destinations (one receiver each): warm-up, then the measured phase. */
const runOnce = async (destinations: number, round: number) => {
  const sinks = await Promise.all(Array.from({ length: destinations }, () => startSink()))
  const directory = mkdtempSync(join(tmpdir(), "hookrelay-bench-fan-out-"))
  const config = join(directory, "config.json")
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{
        id: "bench",
        writeKey,
        destinations: sinks.map((sink, index) => ({
          id: `d${index + 1}`,
          enabled: true,
          sharedSecret: `secret-${index + 1}`,
          endpoints: [{ url: `${sink.url}/hook` }]
        }))
      }]
    })
  )
  const server = await startHookrelay({
    env: {
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_DATA_DIR: join(directory, "data"),
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      DATABASE_URL: ""
    }
  })
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    const run = `r${round}-${destinations}`
    await postAll(agent, server.url, `${run}-warm-up`, warmUpMessages)
    await allReceived(sinks, warmUpMessages)
    for (const sink of sinks) sink.reset()

    const pid = server.child.pid!
    const cpuBefore = processCpuMicros(pid)
    const started = performance.now()
    await postAll(agent, server.url, run, totalMessages)
    const acceptSeconds = (performance.now() - started) / 1000
    await allReceived(sinks, totalMessages)
    const deliverSeconds = (performance.now() - started) / 1000
    const cpuMicros = processCpuMicros(pid) - cpuBefore
    const stats = await Promise.all(sinks.map((sink) => sink.stats()))
    const requests = stats.reduce((sum, s) => sum + s.requests, 0)
    return {
      destinations,
      round,
      acceptedPerSecond: totalMessages / acceptSeconds,
      deliveredRequestsPerSecond: requests / deliverSeconds,
      cpuMicrosPerDeliveredRequest: cpuMicros / requests,
      duplicates: stats.reduce((sum, s) => sum + s.requests - s.distinct, 0),
      serverPeakRssBytes: peakRssOf(pid)
    }
  } finally {
    await agent.close()
    await server.stop()
    await Promise.all(sinks.map((sink) => sink.stop()))
    rmSync(directory, { recursive: true, force: true })
  }
}

type Run = Awaited<ReturnType<typeof runOnce>>

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const main = async () => {
  buildServer()
  const runs: Array<Run> = []
  // Alternating, the order swapped every round: the machine's drift falls on both alike.
  for (let round = 1; round <= rounds; round++) {
    for (const destinations of round % 2 === 1 ? [1, 3] : [3, 1]) {
      const result = await runOnce(destinations, round)
      console.log(JSON.stringify(result))
      runs.push(result)
    }
  }
  const of = (destinations: number) => runs.filter((run) => run.destinations === destinations)
  const summary = (destinations: number) => ({
    acceptedPerSecond: median(of(destinations).map((run) => run.acceptedPerSecond)),
    deliveredRequestsPerSecond: median(of(destinations).map((run) => run.deliveredRequestsPerSecond)),
    cpuMicrosPerDeliveredRequest: median(of(destinations).map((run) => run.cpuMicrosPerDeliveredRequest)),
    serverPeakRssBytes: Math.max(...of(destinations).map((run) => run.serverPeakRssBytes)),
    duplicates: of(destinations).reduce((sum, run) => sum + run.duplicates, 0)
  })
  const one = summary(1)
  const three = summary(3)
  const cpuRatio = three.cpuMicrosPerDeliveredRequest / one.cpuMicrosPerDeliveredRequest
  const acceptRatio = three.acceptedPerSecond / one.acceptedPerSecond
  const row = (name: string, s: typeof one) =>
    `| ${name} | ${Math.round(s.acceptedPerSecond)} | ${Math.round(s.deliveredRequestsPerSecond)} | ${
      s.cpuMicrosPerDeliveredRequest.toFixed(1)
    } | ${mb(s.serverPeakRssBytes)} | ${s.duplicates} |`
  const runRow = (run: Run) =>
    `| ${run.round} | ${run.destinations} | ${Math.round(run.acceptedPerSecond)} | ${
      Math.round(run.deliveredRequestsPerSecond)
    } | ${run.cpuMicrosPerDeliveredRequest.toFixed(1)} | ${mb(run.serverPeakRssBytes)} |`
  const markdown = `# Fan-out benchmark

${new Date().toISOString()}, Node ${process.version}. Produced by \`npm run bench -- fan-out\` (\`bench/fanOut.ts\`).

${totalMessages} track messages posted to \`/v1/batch\` (${batchSize} a request, ${senders} senders at once) to a
server process (\`dist/main.js\`, SQLite) whose one source has one destination, or three (each with its own loopback
receiver in a process of its own); the same messages either way. ${warmUpMessages} warm-up messages first, uncounted.
${rounds} rounds, each running both, the order swapped every round; medians below (peak RSS: the largest).
CPU is the server process's (user + system, all threads) from the first request to the last receipt, divided by the
requests the receivers got. Accepted/s: messages over the time until the last batch was answered.

| destinations | accepted msg/s | delivered requests/s | server CPU µs per delivered request | server peak RSS MB | duplicates |
|---|---:|---:|---:|---:|---:|
${row("1", one)}
${row("3", three)}

3 destinations against 1: CPU per delivered request ${cpuRatio.toFixed(2)}× (goal ≤ 1.1×: ${
    cpuRatio <= 1.1 ? "met" : "not met"
  }); ingest accepted/s ${acceptRatio.toFixed(2)}× (goal ≥ 0.9×: ${acceptRatio >= 0.9 ? "met" : "not met"}).

Every run:

| round | destinations | accepted msg/s | delivered requests/s | CPU µs per request | peak RSS MB |
|---:|---:|---:|---:|---:|---:|
${runs.map(runRow).join("\n")}
`
  console.log(markdown)
  writeResults("fan-out", markdown, {
    messages: totalMessages,
    warmUp: warmUpMessages,
    rounds,
    one,
    three,
    cpuRatio,
    acceptRatio,
    runs
  })
}

await main()
