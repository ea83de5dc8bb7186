/**
 * End-to-end benchmark (issue: the server): a load generator posts `/v1/batch` (100 messages a
 * request) to the hookrelay server — a real server process as `npm start` runs it (`dist/main.js`, compiled from
 * `src/` first when stale) on SQLite, then on PostgreSQL
 * when DATABASE_URL is set — which delivers to a loopback receiver in a third process. Reports
 * accepted and delivered messages/s, ingest→receipt p50/p99, the server's peak RSS, and the accept
 * latency p99 at a steady 1 000 messages/s, beside two floors measured in the same run under the same steady load (a
 * bare node:http server and an `effect/http` one, each only parsing the body); the same two floors take the
 * throughput phase's requests too, a baseline of accepted/s. The same run POSTs the same
 * delivered bodies straight to the same receiver with undici as the baseline. A probe preloaded into the server
 * (`bench/support/serverProbe.mjs`) reports its event-loop delay and the peaks of its memory kinds per phase.
 *
 *   npx tsx bench/endToEnd.ts [--messages 50000] [--server path/to/main.js] [--skip-raw] [--sqlite-only] [--random-ids]
 *     [--skip-random]
 *
 * `--warm-up n` (default 10 000) messages are accepted and delivered before anything is measured.
 * `--server` runs another compiled server (e.g. a build of an older commit) instead of `dist/main.js`, so that two
 * builds can be measured alternately on the same, shared machine; `--skip-raw` leaves the baseline out and
 * `--sqlite-only` the PostgreSQL run; `--random-ids` sends random UUIDs as message ids in every run; `--skip-random`
 * leaves out the second SQLite run, the one with random ids. Such partial or variant runs print
 * their table without writing bench/results.
 * Environment: SERVER_NODE_OPTIONS (node flags of the server, e.g. `--cpu-prof --cpu-prof-dir=…`), SERVER_STDOUT=file
 * (what the server prints, e.g. with `--trace-gc-nvp`), HOOKRELAY_PROBE_ALLOCATIONS=file (allocation profile per phase),
 * HOOKRELAY_PROBE_CPU=prefix (the server's main-thread CPU profile per phase; phase 1 is the accept phase).
 */
import { randomUUID } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Agent } from "undici"
import {
  arg,
  createPgSchema,
  dropPgSchema,
  mb,
  pgNotRun,
  pgUrl,
  repoRoot,
  type Sink,
  sleep,
  startSink,
  waitFor,
  writeResults
} from "./support/processes.js"
import { benchSetup, buildServer, peakRssOf, startFloor, startHookrelay } from "./support/servers.js"
import { processThreadsMicros } from "./support/threads.js"

const flag = (name: string) => process.argv.includes(`--${name}`)
const serverIndex = process.argv.indexOf("--server")
const serverEntry = serverIndex === -1 ? join(repoRoot, "dist/main.js") : process.argv[serverIndex + 1]!

const totalMessages = arg("messages", 50_000)
/**
 * Messages accepted and delivered before the measured phases (`--warm-up`, 0 for none): the throughput of a server that
 * has been running, not of its first second, whose functions V8 has not compiled yet (bench/NOTES.md, Benchmark
 * method). The raw baseline warms up the same way.
 */
const warmUpMessages = arg("warm-up", 10_000)
const batchSize = 100
const senders = 8
const writeKey = "wk_bench_end_to_end"

/**
 * `--random-ids`: random UUIDs as message ids, as Segment's Python, Go, Ruby, Java and mobile libraries send them.
 * By default the ids are time-ordered, as analytics-node's (`node-next-<ms>-<uuid>`), analytics.js's and our own
 * uuidv7: each sorts after the ones made before it (the counter is zero-padded: unpadded, `run-1000` sorted before
 * `run-999`, and a batch's ids landed in a dozen places of an index). With random ids every ingest transaction writes
 * random pages of the dedupe and message-id indexes.
 */
const randomIds = flag("random-ids")

/** How a run's message ids are made: time-ordered (the default, or random with `--random-ids`), or random. */
type Ids = "default" | "random"

const message = (run: string, i: number, ids: Ids = "default") => ({
  type: "track",
  userId: `user-${i % 1000}`,
  event: "Order Completed",
  messageId: randomIds || ids === "random" ? randomUUID() : `${run}-${String(i).padStart(9, "0")}`,
  properties: { orderId: `order-${i}`, revenue: 12.5, currency: "EUR" },
  context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } }
})

const percentile = (values: Array<number>, p: number) => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

interface ProbeReport {
  readonly loopDelayMs: { readonly p50: number; readonly p99: number; readonly p999: number; readonly max: number }
  readonly peakMemory: {
    readonly rss: number
    readonly heapUsed: number
    readonly heapTotal: number
    readonly external: number
    readonly arrayBuffers: number
  }
  readonly gc: {
    readonly minorCount: number
    readonly minorMs: number
    readonly minorMaxMs: number
    readonly majorCount: number
    readonly majorMs: number
    readonly majorMaxMs: number
  }
}

const startServer = async (env: Record<string, string>, probeFile: string) => {
  const server = await startHookrelay({
    env: { HOOKRELAY_PROBE_FILE: probeFile, ...env },
    entry: serverEntry,
    nodeArgs: [
      ...(process.env.SERVER_NODE_OPTIONS ?? "").split(" ").filter(Boolean),
      "--import",
      join(repoRoot, "bench/support/serverProbe.mjs")
    ],
    // SERVER_STDOUT=file keeps what the server prints (its JSON logs, or V8's --trace-gc* output with SERVER_NODE_OPTIONS).
    stdout: process.env.SERVER_STDOUT
  })
  /** What the server's probe saw since the last call (or its start). */
  const probe = async (): Promise<ProbeReport> => {
    const lines = () => existsSync(probeFile) ? readFileSync(probeFile, "utf8").trim().split("\n").filter(Boolean) : []
    const before = lines().length
    server.child.kill("SIGUSR2")
    await waitFor(() => Promise.resolve(lines().length > before), 10_000, 20)
    return JSON.parse(lines()[before]!) as ProbeReport
  }
  // CPU of the server's threads so far (µs): its event loop's, and the others' (SQLite's writer, GC helpers) together.
  const threads = () => processThreadsMicros(server.child.pid!)
  return { url: server.url, peakRss: () => peakRssOf(server.child.pid!), probe, threads, stop: server.stop }
}

/** 503 answers (ingest overload) seen by the load generator; each is retried after its Retry-After. */
let refused = 0

/**
 * POSTs one batch until it is accepted: a 503 is counted and retried after its `Retry-After`, as Segment clients do;
 * the latency returned includes the waits. Anything else but 200 ends the benchmark.
 */
const post = async (agent: Agent, url: string, body: string) => {
  const started = performance.now()
  for (;;) {
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
    if (response.statusCode === 200) return performance.now() - started
    if (response.statusCode !== 503) throw new Error(`ingest answered ${response.statusCode}`)
    refused += 1
    await sleep(Number(response.headers["retry-after"] ?? 1) * 1000)
  }
}

type Server = Awaited<ReturnType<typeof startServer>>

/** `gc` when node runs with --expose-gc (as `npm run bench` does). */
const collectGarbage = (globalThis as { gc?: () => void }).gc

/** Sends `count` messages as the throughput phase does and waits until the receiver has them; then clears its counts. */
const warmUp = async (label: string, count: number, agent: Agent, server: Server, sink: Sink, ids: Ids) => {
  if (count <= 0) return
  const run = `${label}-${Date.now()}-warm-up`
  let next = 0
  await Promise.all(Array.from({ length: senders }, async () => {
    while (next < count) {
      const first = next
      next += batchSize
      const batch = Array.from({ length: Math.min(batchSize, count - first) }, (_, k) => message(run, first + k, ids))
      await post(agent, server.url, JSON.stringify({ batch }))
    }
  }))
  await waitFor(async () => (await sink.stats()).distinct >= count, 120_000, 50)
  sink.reset()
}

/** The throughput phase's requests: `totalMessages` messages in batches of `batchSize`, with their message ids. */
const throughputBodies = (run: string, ids: Ids) =>
  Array.from({ length: totalMessages / batchSize }, (_, b) => {
    const batch = Array.from({ length: batchSize }, (_, k) => message(run, b * batchSize + k, ids))
    return { ids: batch.map((m) => m.messageId), body: JSON.stringify({ batch }) }
  })

/** Every sender posts the next request as soon as its last one was answered, until none is left. */
const postAll = async (
  agent: Agent,
  url: string,
  bodies: ReadonlyArray<{ readonly ids: ReadonlyArray<string>; readonly body: string }>,
  onSend: (ids: ReadonlyArray<string>) => void = () => {}
) => {
  let next = 0
  await Promise.all(Array.from({ length: senders }, async () => {
    while (next < bodies.length) {
      const { body, ids } = bodies[next++]!
      onSend(ids)
      await post(agent, url, body)
    }
  }))
}

/** Throughput: every sender posts batches back to back; then waits until the receiver has every message. */
const throughputPhase = async (label: string, agent: Agent, server: Server, sink: Sink, ids: Ids) => {
  const sentAt = new Map<string, number>()
  await server.probe()
  const bodies = throughputBodies(`${label}-${Date.now()}`, ids)
  refused = 0
  const threadsBefore = server.threads()
  const started = performance.now()
  await postAll(agent, server.url, bodies, (batchIds) => {
    const at = performance.timeOrigin + performance.now()
    for (const id of batchIds) sentAt.set(id, at)
  })
  const acceptSeconds = (performance.now() - started) / 1000
  const threadsAfter = server.threads()
  const duringAccept = await server.probe()
  const refusedDuringAccept = refused
  await waitFor(async () => (await sink.stats()).distinct >= totalMessages, 600_000, 100)
  const deliverSeconds = (performance.now() - started) / 1000
  const stats = await sink.stats(true)
  const latencies = Object.entries(stats.receipts ?? {}).map(([id, at]) => at - (sentAt.get(id) ?? at))
  // Delivery during the accept phase and after it: where the delivered/s figure comes from.
  const acceptEndedAt = performance.timeOrigin + started + acceptSeconds * 1000
  const receipts = Object.values(stats.receipts ?? {})
  const deliveredDuringAccept = receipts.filter((at) => at <= acceptEndedAt).length
  const lastReceiptAt = receipts.reduce((last, at) => Math.max(last, at), acceptEndedAt)
  const afterAcceptPerSecond = lastReceiptAt > acceptEndedAt
    ? (receipts.length - deliveredDuringAccept) / ((lastReceiptAt - acceptEndedAt) / 1000)
    : 0
  return {
    acceptedPerSecond: totalMessages / acceptSeconds,
    acceptSeconds,
    deliveredDuringAccept,
    // The server's CPU in the accept phase per message accepted (its deliveries meanwhile included).
    acceptCpuMain: (threadsAfter.main - threadsBefore.main) / totalMessages,
    acceptCpuOthers: (threadsAfter.others - threadsBefore.others) / totalMessages,
    afterAcceptPerSecond,
    deliveredPerSecond: totalMessages / deliverSeconds,
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
    duplicates: stats.requests - stats.distinct,
    duringAccept,
    refusedDuringAccept
  }
}

/**
 * The steady load: 1 000 messages/s as 100 requests/s of 10 messages, for 10 s, each request timed from its send to
 * its answer. Also the load generator's own event-loop delay meanwhile: a request's latency is timed here, so a stall
 * of this process (its GC, the machine's other work) is in the accept p99 too.
 */
const steadyLoad = async (agent: Agent, url: string, run: string, ids: Ids = "default") => {
  const latencies: Array<number> = []
  const ownLoop = monitorEventLoopDelay({ resolution: 1 })
  ownLoop.enable()
  const started = performance.now()
  const pending: Array<Promise<void>> = []
  let failure: unknown = undefined
  for (let i = 0; i < 1000; i++) {
    const wait = started + i * 10 - performance.now()
    if (wait > 0) await sleep(wait)
    const batch = Array.from({ length: 10 }, (_, k) => message(run, i * 10 + k, ids))
    // Awaited all together below; a failure is kept until then, so that it ends the run through the caller's cleanup
    // (an unhandled rejection would exit at once and leave the server running).
    pending.push(
      post(agent, url, JSON.stringify({ batch })).then(
        (ms) => void latencies.push(ms),
        (error: unknown) => void (failure ??= error)
      )
    )
  }
  await Promise.all(pending)
  ownLoop.disable()
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error("a sender failed", { cause: failure })
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    generatorLoopDelayMs: {
      p99: Math.round(ownLoop.percentile(99) / 1e4) / 100,
      max: Math.round(ownLoop.max / 1e4) / 100
    }
  }
}

/**
 * A floor of the accept latency: the steady load against a server in its own process that parses each body and
 * answers at once, `bench/support/plainServer.mjs` (bare node:http) or `effectServer.mjs` (effect/http's
 * HttpServer, as hookrelay serves). What is left above them is the framework's cost and the server's own work.
 */
const steadyFloor = async (script: "plainServer.mjs" | "effectServer.mjs") => {
  const floor = await startFloor(script)
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    return await steadyLoad(agent, floor.url, `floor-${Date.now()}`)
  } finally {
    await agent.close()
    floor.stop()
  }
}

/**
 * A floor of accepted/s: the throughput phase's requests, from the same senders, to a server in its own process that
 * parses each body and answers at once (no validation, no store, nothing delivered). The same warm-up first.
 */
const acceptFloor = async (script: "plainServer.mjs" | "effectServer.mjs") => {
  const floor = await startFloor(script)
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    const run = `floor-${Date.now()}`
    await postAll(agent, floor.url, throughputBodies(`${run}-warm-up`, "default").slice(0, warmUpMessages / batchSize))
    const bodies = throughputBodies(run, "default")
    const started = performance.now()
    await postAll(agent, floor.url, bodies)
    return totalMessages / ((performance.now() - started) / 1000)
  } finally {
    await agent.close()
    floor.stop()
  }
}

const runServer = async (label: string, storeEnv: Record<string, string>, sinkUrl: string, ids: Ids = "default") => {
  const sink = await startSink({ SINK_RECEIPTS: "1" })
  const setup = benchSetup({ sourceId: "bench", writeKey, hookUrl: `${sink.url}/hook` })
  const server = await startServer({ ...setup.env, ...storeEnv }, join(setup.directory, "probe.jsonl"))
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    await warmUp(label, warmUpMessages, agent, server, sink, ids)
    const throughput = await throughputPhase(label, agent, server, sink, ids)
    // The throughput phase's bodies, send times and receipts are garbage now: collected here (npm run bench gives
    // --expose-gc), not by a full collection of this process in the middle of the steady phase, whose latencies are
    // timed here.
    collectGarbage?.()

    await server.probe()
    refused = 0
    const steady = await steadyLoad(agent, server.url, `${label}-${Date.now()}-steady`, ids)
    const duringSteady = await server.probe()

    return {
      ...throughput,
      acceptP99AtSteadyMs: steady.p99,
      acceptP50AtSteadyMs: steady.p50,
      serverPeakRssBytes: server.peakRss(),
      duringSteady,
      refusedDuringSteady: refused,
      generatorLoopDelayMs: steady.generatorLoopDelayMs
    }
  } finally {
    await agent.close()
    await server.stop()
    await sink.stop()
    setup.remove()
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
    /** POSTs bodies `from` to `to` (exclusive), 16 at a time. */
    const send = async (from: number, to: number) => {
      let next = from
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (next < to) {
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
    }
    // The warm-up repeats the first bodies, uncounted: the receiver counts nothing here.
    await send(0, Math.min(warmUpMessages, bodies.length))
    const started = performance.now()
    await send(0, bodies.length)
    return totalMessages / ((performance.now() - started) / 1000)
  } finally {
    await agent.close()
    await sink.stop()
  }
}

/** A fresh schema for the PostgreSQL run (created here, dropped after), selected through the URL's search_path. */
const pgRun = async (url: string) => {
  const schema = `bench_e2e_${process.pid}`
  await createPgSchema(schema)
  const withSchema = new URL(url)
  withSchema.searchParams.set("options", `-c search_path=${schema}`)
  try {
    // A deployment on PostgreSQL holds its keys for stored secrets (docs/SECURITY.md): a fixed bench key.
    return await runServer("pg", {
      DATABASE_URL: withSchema.toString(),
      HOOKRELAY_SECRET_KEYS: `bench:${Buffer.alloc(32, 7).toString("base64")}`
    }, "")
  } finally {
    await dropPgSchema(schema)
  }
}

const main = async () => {
  // The server runs as `npm start` runs it: compiled (src → dist when stale), on plain node.
  buildServer()
  // The machine's speed drifts between runs (other tenants): the baseline is the mean of a raw run before the servers
  // and one after them.
  const rawBefore = flag("skip-raw") ? 0 : await rawBaseline()
  const floor = await steadyFloor("plainServer.mjs")
  const effectFloor = await steadyFloor("effectServer.mjs")
  const acceptedFloor = await acceptFloor("plainServer.mjs")
  const acceptedEffectFloor = await acceptFloor("effectServer.mjs")
  const sqlite = await runServer("sqlite", {}, "")
  // The same on SQLite with random message ids, as Segment's server-side and mobile libraries send them (`--skip-random`
  // leaves it out; with `--random-ids` every run has them already).
  const sqliteRandom = flag("skip-random") || randomIds ? undefined : await runServer("sqlite-random", {}, "", "random")
  const databaseUrl = pgUrl()
  if (!flag("sqlite-only") && databaseUrl === undefined) console.error(pgNotRun)
  const pg = flag("sqlite-only") || databaseUrl === undefined ? undefined : await pgRun(databaseUrl)
  const rawAfter = flag("skip-raw") ? 0 : await rawBaseline()
  const raw = (rawBefore + rawAfter) / 2
  const row = (name: string, r: Awaited<ReturnType<typeof runServer>>) =>
    `| ${name} | ${Math.round(r.acceptedPerSecond)} | ${Math.round(r.deliveredPerSecond)} | ${
      (r.deliveredPerSecond / raw).toFixed(2)
    }× | ${Math.round(r.latencyP50Ms)} | ${Math.round(r.latencyP99Ms)} | ${r.acceptP99AtSteadyMs.toFixed(1)} | ${
      mb(r.serverPeakRssBytes)
    } | ${r.duplicates} |`
  const probeRow = (name: string, r: Awaited<ReturnType<typeof runServer>>) => {
    const delay = (report: ProbeReport) =>
      `${report.loopDelayMs.p50} / ${report.loopDelayMs.p99} / ${report.loopDelayMs.max}`
    const memory = r.duringAccept.peakMemory
    return `| ${name} | ${delay(r.duringAccept)} | ${delay(r.duringSteady)} | ${
      r.acceptP50AtSteadyMs.toFixed(1)
    } | ${r.refusedDuringAccept} / ${r.refusedDuringSteady} | ${mb(memory.heapUsed)} | ${mb(memory.heapTotal)} | ${
      mb(memory.external)
    } | ${mb(memory.arrayBuffers)} |`
  }
  const drainLine = (name: string, r: Awaited<ReturnType<typeof runServer>>) =>
    `${name}: accept phase ${
      r.acceptSeconds.toFixed(2)
    } s with ${r.deliveredDuringAccept} delivered in it (the server's CPU ${
      r.acceptCpuMain.toFixed(1)
    } µs on its event loop and ${r.acceptCpuOthers.toFixed(1)} on its other threads a message accepted), then ${
      Math.round(r.afterAcceptPerSecond)
    } msg/s (${(r.afterAcceptPerSecond / raw).toFixed(2)}× raw) from its end to the last receipt.`
  const gcRow = (name: string, r: Awaited<ReturnType<typeof runServer>>) => {
    const pauses = (report: ProbeReport) =>
      `${report.gc.minorCount} / ${Math.round(report.gc.minorMs)} / ${
        report.gc.minorMaxMs.toFixed(1)
      } | ${report.gc.majorCount} / ${Math.round(report.gc.majorMs)} / ${report.gc.majorMaxMs.toFixed(1)}`
    return `| ${name} | ${pauses(r.duringAccept)} | ${pauses(r.duringSteady)} |`
  }
  const markdown = `# End-to-end benchmark

${new Date().toISOString()}, Node ${process.version}. Produced by \`npm run bench\` (\`bench/endToEnd.ts\`).

${totalMessages} track messages posted to \`/v1/batch\` (${batchSize} a request, ${senders} senders at once) to a
server process (\`dist/main.js\` on plain node, as \`npm start\` runs it), delivered to a loopback receiver in a
third process. Message ids are time-ordered, as analytics-node and analytics.js make them; the second SQLite run sends
random UUIDs, as Segment's Python, Go, Ruby, Java and mobile libraries do (each message then lands on its own pages of
the dedupe and message-id indexes). Delivered/s counts from the first request to the last receipt. Latency is from posting a message's
batch to its receipt. Accept p99 is measured afterwards at a steady 1 000 messages/s (100 requests/s of 10
messages). Before the phases the server accepts and delivers ${warmUpMessages} warm-up messages, uncounted (the
throughput of a running server, not of its first second); the baseline warms up the same way. A 503 (ingest
overload) is counted and the
batch posted again after its Retry-After, the wait included in its latency. Baseline: the same number of bodies
POSTed straight to a receiver with undici, 16 at a time, before and after the servers ran: ${Math.round(raw)} messages/s
(${Math.round(rawBefore)} / ${Math.round(rawAfter)}; the ratio uses their mean).

| store | accepted msg/s | delivered msg/s | delivered / raw | p50 ms | p99 ms | accept p99 ms at 1 000/s | server peak RSS MB | duplicates |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${row("SQLite", sqlite)}
${sqliteRandom === undefined ? "" : row("SQLite, random message ids", sqliteRandom)}
${pg === undefined ? "" : row("PostgreSQL", pg)}

The floors of accepted/s: the same requests from the same senders to a server in its own process that parses each
body and answers at once, no store — bare \`node:http\`: ${Math.round(acceptedFloor)} msg/s; \`effect/http\`'s
\`HttpServer\` with hookrelay's middleware: ${Math.round(acceptedEffectFloor)} msg/s. hookrelay on SQLite accepted ${
    (sqlite.acceptedPerSecond / acceptedFloor).toFixed(2)
  }× the first and ${
    (sqlite.acceptedPerSecond / acceptedEffectFloor).toFixed(2)
  }× the second (validating, stamping, encoding
and committing each message, while delivering).

The floors of the accept latency: the same steady load against a server in its own process that parses each body
and answers at once, no store — bare \`node:http\` (\`bench/support/plainServer.mjs\`): p50 ${
    floor.p50.toFixed(1)
  } / p99 ${
    floor.p99.toFixed(1)
  } ms; \`effect/http\`'s \`HttpServer\` with hookrelay's middleware (\`effectServer.mjs\`): p50 ${
    effectFloor.p50.toFixed(1)
  } / p99 ${
    effectFloor.p99.toFixed(1)
  } ms. The load generator's own event-loop delay p99 / max meanwhile: ${floor.generatorLoopDelayMs.p99} / ${floor.generatorLoopDelayMs.max} and ${effectFloor.generatorLoopDelayMs.p99} / ${effectFloor.generatorLoopDelayMs.max} ms.
Between the floors is what the framework costs a request; above the second, the server's own work: validating and
encoding the messages, the commit, and the deliveries it runs at the same time.

Where delivered/s comes from: while ingest saturates the server's event loop its claims are held back (README,
"Ingest before delivery"); after the last accepted request the backlog drains. ${drainLine("SQLite", sqlite)}${
    sqliteRandom === undefined ? "" : ` ${drainLine("SQLite with random message ids", sqliteRandom)}`
  }${pg === undefined ? "" : ` ${drainLine("PostgreSQL", pg)}`}

The server's event loop (\`bench/support/serverProbe.mjs\`, \`monitorEventLoopDelay\` at 1 ms resolution, so
≈ 1 ms is no delay) during the throughput phase and during the steady phase, and the peaks of its memory kinds
during the throughput phase (RSS beyond them is native: SQLite's page cache, sockets, code):

| store | loop delay p50 / p99 / max ms, throughput | loop delay p50 / p99 / max ms, steady | accept p50 ms at 1 000/s | 503 answers (throughput / steady) | heap used MB | heap total MB | external MB | array buffers MB |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${probeRow("SQLite", sqlite)}
${sqliteRandom === undefined ? "" : probeRow("SQLite, random message ids", sqliteRandom)}
${pg === undefined ? "" : probeRow("PostgreSQL", pg)}

The load generator's own event-loop delay during the steady phase (p99 / max ms; the accept latency is timed in
that process): SQLite ${sqlite.generatorLoopDelayMs.p99} / ${sqlite.generatorLoopDelayMs.max}${
    pg === undefined ? "" : `, PostgreSQL ${pg.generatorLoopDelayMs.p99} / ${pg.generatorLoopDelayMs.max}`
  }.

The server's GC pauses per phase (count / total ms / longest ms), young generation and full collections:

| store | young, throughput | full, throughput | young, steady | full, steady |
|---|---:|---:|---:|---:|
${gcRow("SQLite", sqlite)}
${sqliteRandom === undefined ? "" : gcRow("SQLite, random message ids", sqliteRandom)}
${pg === undefined ? "" : gcRow("PostgreSQL", pg)}

Targets: ≥ 50 000 messages/s accepted on SQLite; delivered ≥ 0.35× raw; accept p99 < 10 ms at 1 000 messages/s.${
    pg === undefined && !flag("sqlite-only") ? `\n\n${pgNotRun}` : ""
  }
`
  // A partial run (another server, no baseline, no PostgreSQL) is printed only, never written over the results.
  if (raw > 0 && serverIndex === -1 && !flag("sqlite-only") && !randomIds && !flag("skip-random")) {
    writeResults("end-to-end", markdown, {
      totalMessages,
      batchSize,
      senders,
      raw,
      rawBefore,
      rawAfter,
      steadyFloor: floor,
      acceptedFloor,
      acceptedEffectFloor,
      steadyEffectFloor: effectFloor,
      sqlite,
      sqliteRandomIds: sqliteRandom,
      pg
    })
  }
  console.log(markdown)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
