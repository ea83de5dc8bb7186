/**
 * Web-source benchmark: browser traffic, one message a request. analytics.js posts each call on its own, `text/plain`
 * to `/v1/t` with Basic auth, the write key in the body and the page's origin, ~1 KB of JSON; many pages at once. The
 * same requests go to three servers in processes of their own, each after a warm-up: the bare `node:http` floor and
 * `effect/http`'s (`bench/support/plainServer.mjs`, `effectServer.mjs`: read, parse, answer), then hookrelay as
 * `npm start` runs it (SQLite), first with its webhooks disabled (no job stored), then delivering each message to a
 * loopback receiver while it accepts. Reported per server: requests/s,
 * the ratio to the bare floor, latency p50/p99, CPU per request of the server process (all its threads) and of the
 * load generator, peak RSS; for hookrelay, that every accepted message was delivered once.
 *
 *   node --expose-gc --import tsx bench/webSources.ts [--requests 20000] [--connections 64] [--warm-up 3000]
 *     [--server path/to/main.js] [--hookrelay-only]
 *
 * `--server` runs another compiled server (a build of an older commit, say) instead of `dist/main.js`, so that two
 * builds can be measured alternately on the same, shared machine; `--hookrelay-only` leaves the floors out. Such runs
 * print their table without writing bench/results.
 */
import { randomUUID } from "node:crypto"
import { Agent } from "undici"
import { percentile } from "./support/percentile.js"
import { arg, mb, sleep, startSink, waitFor, writeResults } from "./support/processes.js"
import { benchSetup, buildServer, peakRssOf, processCpuMicros, startFloor, startHookrelay } from "./support/servers.js"
import { processThreadsMicros } from "./support/threads.js"

const measuredRequests = arg("requests", 20_000)
const connections = arg("connections", 64)
const warmUpRequests = arg("warm-up", 3_000)
const serverIndex = process.argv.indexOf("--server")
const serverEntry = serverIndex === -1 ? undefined : process.argv[serverIndex + 1]!
const hookrelayOnly = process.argv.includes("--hookrelay-only")
const writeKey = "wk_bench_web_sources"
const pageOrigin = "https://shop.example.com"
const authorization = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`
const userAgent =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

/** A track call as analytics.js 1.84 puts it on the wire (its fields, its context), ~1 KB. */
const analyticsJsTrack = (run: string, i: number) => {
  const now = new Date().toISOString()
  return JSON.stringify({
    timestamp: now,
    integrations: {},
    event: "Product Viewed",
    type: "track",
    properties: { product_id: `p-${i % 500}`, name: "Trail Running Shoe", price: 119.9, currency: "EUR" },
    context: {
      page: {
        path: "/products/trail-running-shoe",
        referrer: "https://www.example.org/search?q=trail+shoes",
        search: "",
        title: "Trail Running Shoe | Shop",
        url: "https://shop.example.com/products/trail-running-shoe"
      },
      userAgent,
      userAgentData: { brands: [{ brand: "Chromium", version: "156" }], mobile: false, platform: "Linux" },
      locale: "en-US",
      library: { name: "analytics.js", version: "npm:next-1.84.3" },
      timezone: "Europe/Berlin"
    },
    messageId: `ajs-next-${run}-${String(i).padStart(9, "0")}`,
    anonymousId: `anon-${i % 5000}`,
    writeKey,
    sentAt: now,
    _metadata: { bundled: ["Segment.io"], unbundled: [], bundledIds: [] }
  })
}

/** 503 answers (ingest overload) seen: each is posted again after its Retry-After, as analytics.js does. */
let refused = 0

const postTrack = async (agent: Agent, origin: string, body: string) => {
  const started = performance.now()
  for (;;) {
    const response = await agent.request({
      origin,
      path: "/v1/t",
      method: "POST",
      headers: { "content-type": "text/plain", authorization, origin: pageOrigin, "user-agent": userAgent },
      body
    })
    await response.body.dump()
    if (response.statusCode === 200) return performance.now() - started
    if (response.statusCode !== 503) throw new Error(`${origin} answered ${response.statusCode}`)
    refused += 1
    await sleep(Number(response.headers["retry-after"] ?? 1) * 1000)
  }
}

/** `count` requests from `connections` pages at once; latencies in ms. */
const load = async (agent: Agent, origin: string, run: string, count: number) => {
  const latencies: Array<number> = []
  let next = 0
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < count) {
      const i = next++
      latencies.push(await postTrack(agent, origin, analyticsJsTrack(run, i)))
    }
  }))
  return latencies
}

interface Measured {
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly serverCpuMicrosPerRequest: number
  /** Of the server's CPU a request: its main thread's (the rest is its other threads': SQLite's, GC, …). */
  readonly serverMainThreadMicrosPerRequest: number
  readonly generatorCpuMicrosPerRequest: number
  readonly serverPeakRssBytes: number
}

/** Warms `origin` up, then measures: the server's CPU from `/proc`, the load generator's from `process.cpuUsage`. */
const measure = async (origin: string, serverPid: number, label: string): Promise<Measured> => {
  const agent = new Agent({ keepAliveTimeout: 30_000, connections })
  try {
    await load(agent, origin, `${label}-warm-${randomUUID()}`, warmUpRequests)
    const serverBefore = processCpuMicros(serverPid)
    const threadsBefore = processThreadsMicros(serverPid)
    const ownBefore = process.cpuUsage()
    const started = performance.now()
    const latencies = await load(agent, origin, `${label}-${randomUUID()}`, measuredRequests)
    const seconds = (performance.now() - started) / 1000
    const own = process.cpuUsage(ownBefore)
    return {
      requestsPerSecond: measuredRequests / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      serverCpuMicrosPerRequest: (processCpuMicros(serverPid) - serverBefore) / measuredRequests,
      serverMainThreadMicrosPerRequest: (processThreadsMicros(serverPid).main - threadsBefore.main) / measuredRequests,
      generatorCpuMicrosPerRequest: (own.user + own.system) / measuredRequests,
      serverPeakRssBytes: peakRssOf(serverPid)
    }
  } finally {
    await agent.close()
  }
}

const floorRun = async (script: "plainServer.mjs" | "effectServer.mjs") => {
  const floor = await startFloor(script)
  try {
    return await measure(floor.url, floor.child.pid!, script)
  } finally {
    floor.stop()
  }
}

/**
 * hookrelay on SQLite, delivering every message to a loopback receiver while it accepts; or, with `delivering: false`,
 * its webhook destination disabled: each message validated, deduplicated and counted, no job stored.
 */
const hookrelayRun = async (delivering: boolean) => {
  const sink = await startSink()
  const setup = benchSetup({ sourceId: "web", writeKey, hookUrl: `${sink.url}/hook`, webhooksEnabled: delivering })
  const server = await startHookrelay({ env: setup.env, entry: serverEntry })
  try {
    refused = 0
    const measured = await measure(server.url, server.child.pid!, "hookrelay")
    // Every message accepted, warm-up included, is delivered once (ids are unique per request).
    const accepted = warmUpRequests + measuredRequests
    if (delivering) await waitFor(async () => (await sink.stats()).distinct >= accepted, 120_000, 100)
    const stats = await sink.stats()
    return { ...measured, refused, delivered: stats.distinct, duplicates: stats.requests - stats.distinct }
  } finally {
    await server.stop()
    await sink.stop()
    setup.remove()
  }
}

const main = async () => {
  if (serverEntry === undefined) buildServer()
  const bare = hookrelayOnly ? undefined : await floorRun("plainServer.mjs")
  const platform = hookrelayOnly ? undefined : await floorRun("effectServer.mjs")
  const ingestOnly = await hookrelayRun(false)
  const hookrelay = await hookrelayRun(true)
  const row = (name: string, r: Measured | undefined) =>
    r === undefined ?
      `| ${name} | not run |  |  |  |  |  |  |  |` :
      `| ${name} | ${Math.round(r.requestsPerSecond)} | ${
        bare === undefined ? "—" : `${(r.requestsPerSecond / bare.requestsPerSecond).toFixed(2)}×`
      } | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} | ${Math.round(r.serverCpuMicrosPerRequest)} | ${
        Math.round(r.serverMainThreadMicrosPerRequest)
      } | ${Math.round(r.generatorCpuMicrosPerRequest)} | ${mb(r.serverPeakRssBytes)} |`
  const markdown = `# Web-source benchmark

${new Date().toISOString()}, Node ${process.version}. Produced by \`npm run bench\` (\`bench/webSources.ts\`).

Browser traffic: ${measuredRequests} track calls, one per request as analytics.js sends them (\`POST /v1/t\`,
\`text/plain\`, Basic auth, the write key in the body, an \`Origin\`, ~1 KB of JSON), from ${connections} connections at
once, after ${warmUpRequests} unmeasured ones. The floors read and parse each body and answer at once, in a process of
their own: bare \`node:http\` (\`bench/support/plainServer.mjs\`) and \`effect/http\`'s \`HttpServer\` with
hookrelay's middleware (\`effectServer.mjs\`). hookrelay runs as \`npm start\` runs it, on SQLite: with its webhook
destination disabled (each message validated, deduplicated and counted in a commit, no job stored), then delivering
each message to a loopback receiver in a third process while it accepts. CPU per request: the server's process, all its threads
(\`/proc/<pid>/stat\`, 10 ms ticks), of which its main thread's (\`/proc/<pid>/task\`; the rest is mostly hookrelay's
SQLite thread), and the load generator's; on 2 cores they share, the sum bounds requests/s.

| server | requests/s | ratio to bare node:http | p50 ms | p99 ms | server CPU µs/request | of which main thread | load generator CPU µs/request | server peak RSS MB |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${row("bare node:http", bare)}
${row("effect/http", platform)}
${row("hookrelay (SQLite), webhooks disabled: no job stored", ingestOnly)}
${row("hookrelay (SQLite), delivering each message", hookrelay)}

hookrelay delivering: ${hookrelay.delivered} of ${
    warmUpRequests + measuredRequests
  } accepted messages delivered (warm-up included), ${hookrelay.duplicates} duplicates. Answers 503 (overload), each
posted again after its Retry-After: ${ingestOnly.refused} with webhooks disabled, ${hookrelay.refused} delivering.
`
  if (hookrelayOnly || serverEntry !== undefined) return console.log(markdown)
  writeResults("web-sources", markdown, {
    measuredRequests,
    connections,
    warmUpRequests,
    bare,
    platform,
    ingestOnly,
    hookrelay
  })
  console.log(markdown)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
