/**
 * Telemetry benchmark: the end-to-end run (a load generator posting `/v1/batch`, 100 messages a request, 8 senders, to a
 * hookrelay process on SQLite delivering to a loopback receiver) with telemetry off and with it on (OTLP/HTTP to a
 * loopback collector in a process of its own), alternately in one sitting, 10 000 warm-up messages each. Reports
 * accepted/s, delivered/s and CPU per message of each, their ratio on/off per round, and the server's peak RSS.
 * The modes always run: "off"; "on", every trace sampled (`parentbased_traceidratio`, `1.0`); "sampled", one trace
 * in ten (`0.1`), the producers sending no `traceparent` (so every span is a root, decided by the ratio); "parents",
 * `0.1` with producers sending a sampled parent (`traceparent` flag 01), which parent-based sampling follows: what
 * sampling costs when upstream samples everything.
 *
 *   npx tsx bench/telemetry.ts [--messages 50000] [--rounds 3] [--before path/to/dist/main.js [--before-on]]
 *     [--unsampled] [--gzip] [--json] [--profile dir]
 *
 * `--before` adds another server, the compiled build before telemetry existed (a worktree of the base commit, built
 * with `tsc -p tsconfig.build.json`), run off in the same rounds: "off" against "before" is what telemetry costs when
 * it is not used; with `--before-on` it exports as "on" does instead, which compares two builds' telemetry.
 * `--unsampled` adds "on" with no trace sampled (`always_off`): the trace context stored and sent, spans made and
 * dropped, nothing exported; `--gzip` adds "on" with gzipped bodies (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip`); `--json`
 * adds "on" with JSON bodies (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) instead of the default protobuf.
 * `--profile dir` writes each server's V8 CPU profile under `dir/<mode>/` (its main thread's is the largest file).
 */
import { fork } from "node:child_process"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { Agent } from "undici"
import { arg, mb, repoRoot, startSink, waitFor, writeResults } from "./support/processes.js"
import {
  benchSetup,
  buildServer,
  mainThreadCpuMicros,
  peakRssOf,
  processCpuMicros,
  startHookrelay
} from "./support/servers.js"

const totalMessages = arg("messages", 50_000)
const rounds = arg("rounds", 3)
const warmUpMessages = 10_000
const batchSize = 100
const senders = 8
const writeKey = "wk_bench_telemetry"
const beforeIndex = process.argv.indexOf("--before")
const beforeEntry = beforeIndex === -1 ? undefined : process.argv[beforeIndex + 1]!
const beforeOn = process.argv.includes("--before-on")
const profileIndex = process.argv.indexOf("--profile")
const profileDir = profileIndex === -1 ? undefined : process.argv[profileIndex + 1]!

/**
 * `on`: every trace recorded (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`, `1.0`); `sampled`: one in ten (`0.1`),
 * the producers sending no `traceparent`; `parents`: `0.1`, each request with a sampled `traceparent` of its own.
 */
type Mode = "off" | "on" | "sampled" | "parents" | "unsampled" | "gzip" | "json" | "before"

interface Run {
  readonly mode: Mode
  readonly round: number
  readonly acceptedPerSecond: number
  readonly deliveredPerSecond: number
  readonly peakRssMb: number
  /** The server process's CPU (all its threads) per message of the measured phase: less bent by the machine's other
   * work than the rates are. */
  readonly cpuMicrosPerMessage: number
  /** Of which the main thread's: the rest is the SQLite thread, the garbage collector's helpers and libuv's pool. */
  readonly mainCpuMicrosPerMessage: number
  readonly spans: number
  /** The collector's CPU per message of the measured phase: it takes the same two cores as the server. */
  readonly collectorCpuMicrosPerMessage: number
}

const message = (run: string, i: number) => ({
  type: "track",
  userId: `user-${i % 1000}`,
  event: "Order Completed",
  messageId: `${run}-${String(i).padStart(9, "0")}`,
  properties: { orderId: `order-${i}`, revenue: 12.5, currency: "EUR" },
  context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } }
})

const bodies = (run: string, count: number) =>
  Array.from({ length: Math.ceil(count / batchSize) }, (_, b) =>
    JSON.stringify({
      batch: Array.from(
        { length: Math.min(batchSize, count - b * batchSize) },
        (_, k) => message(run, b * batchSize + k)
      )
    }))

/** A sampled W3C parent, a trace of its own per request, as an upstream that samples everything sends. */
const sampledParent = () => `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`

const postAll = async (agent: Agent, url: string, requests: ReadonlyArray<string>, parents: boolean) => {
  let next = 0
  const authorization = `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`
  const sender = async () => {
    while (next < requests.length) {
      const body = requests[next++]!
      const headers: Record<string, string> = { "content-type": "application/json", authorization }
      if (parents) headers.traceparent = sampledParent()
      for (;;) {
        const response = await agent.request({ origin: url, path: "/v1/batch", method: "POST", headers, body })
        await response.body.dump()
        if (response.statusCode === 200) break
        if (response.statusCode !== 503) throw new Error(`ingest answered ${response.statusCode}`)
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
  }
  await Promise.all(Array.from({ length: senders }, sender))
}

/** The loopback collector, in a process of its own. */
const startCollector = async () => {
  const child = fork(join(repoRoot, "bench/support/otlpSink.mjs"), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once("error", reject)
    child.once("message", (message: { port: number }) => resolve(message.port))
  })
  const stats = () =>
    new Promise<{ spans: number }>((resolve) => {
      child.once("message", (message: { spans: number }) => resolve(message))
      child.send({ type: "stats" })
    })
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stats, stop: () => child.disconnect() }
}

/**
 * The spans the collector has once every attempt's has arrived (when every trace is sampled) and the export timer
 * (5 s) has sent what remained queued (the requests' and the batches' spans): "every span exported" is checked on
 * this count.
 */
const spansReceived = async (collector: { readonly stats: () => Promise<{ spans: number }> }, everySpan: boolean) => {
  const attempts = warmUpMessages + totalMessages
  if (everySpan) {
    await waitFor(async () => (await collector.stats()).spans >= attempts, 30_000, 250).catch(() => undefined)
  }
  await new Promise((resolve) => setTimeout(resolve, 5_500))
  return (await collector.stats()).spans
}

const runOnce = async (mode: Mode, round: number): Promise<Run> => {
  const sink = await startSink()
  const exporting = mode === "before" ? beforeOn : mode !== "off"
  const collector = exporting ? await startCollector() : undefined
  const setup = benchSetup({ sourceId: "bench", writeKey, hookUrl: `${sink.url}/hook` })
  const server = await startHookrelay({
    env: {
      ...setup.env,
      ...(collector === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: "bench" }),
      ...(mode === "on" ? { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.0" } : {}),
      ...(mode === "sampled" || mode === "parents"
        ? { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }
        : {}),
      ...(mode === "unsampled" ? { OTEL_TRACES_SAMPLER: "always_off" } : {}),
      ...(mode === "gzip" ? { OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" } : {}),
      ...(mode === "json" ? { OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" } : {})
    },
    entry: mode === "before" ? beforeEntry : undefined,
    nodeArgs: profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, mode)}`]
  })
  const agent = new Agent({ keepAliveTimeout: 30_000 })
  try {
    const run = `${mode}-${round}-${Date.now()}`
    const parents = mode === "parents"
    await postAll(agent, server.url, bodies(`${run}-warm`, warmUpMessages), parents)
    await waitFor(async () => (await sink.stats()).distinct >= warmUpMessages, 120_000, 100)
    const requests = bodies(run, totalMessages)
    const cpuBefore = processCpuMicros(server.child.pid!)
    const mainCpuBefore = mainThreadCpuMicros(server.child.pid!)
    const collectorCpuBefore = collector === undefined ? 0 : processCpuMicros(collector.pid)
    const started = performance.now()
    await postAll(agent, server.url, requests, parents)
    const acceptSeconds = (performance.now() - started) / 1000
    await waitFor(async () => (await sink.stats()).distinct >= warmUpMessages + totalMessages, 300_000, 100)
    const deliverSeconds = (performance.now() - started) / 1000
    const cpuMicrosPerMessage = Math.round((processCpuMicros(server.child.pid!) - cpuBefore) / totalMessages * 10) / 10
    const mainCpuMicrosPerMessage =
      Math.round((mainThreadCpuMicros(server.child.pid!) - mainCpuBefore) / totalMessages * 10) / 10
    const collectorCpuMicrosPerMessage = collector === undefined
      ? 0
      : Math.round((processCpuMicros(collector.pid) - collectorCpuBefore) / totalMessages * 10) / 10
    const peakRssMb = mb(peakRssOf(server.child.pid!))
    const spans = collector === undefined
      ? 0
      : await spansReceived(
        collector,
        mode === "on" || mode === "parents" || mode === "gzip" || mode === "json" || mode === "before"
      )
    return {
      mode,
      round,
      acceptedPerSecond: Math.round(totalMessages / acceptSeconds),
      deliveredPerSecond: Math.round(totalMessages / deliverSeconds),
      peakRssMb,
      cpuMicrosPerMessage,
      mainCpuMicrosPerMessage,
      spans,
      collectorCpuMicrosPerMessage
    }
  } finally {
    await agent.close()
    await server.stop()
    collector?.stop()
    await sink.stop()
    setup.remove()
  }
}

/** The middle value; of an even count, the mean of the two middle ones. */
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const value = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return Math.round(value * 1000) / 1000
}

buildServer()
const modes: ReadonlyArray<Mode> = [
  "off",
  "on",
  "sampled",
  "parents",
  ...(process.argv.includes("--unsampled") ? ["unsampled" as const] : []),
  ...(process.argv.includes("--gzip") ? ["gzip" as const] : []),
  ...(process.argv.includes("--json") ? ["json" as const] : []),
  ...(beforeEntry === undefined ? [] : ["before" as const])
]
const runs: Array<Run> = []
for (let round = 1; round <= rounds; round++) {
  // Each round starts with another mode, so that the machine's drift does not favour one.
  const order = modes.map((_, i) => modes[(i + round - 1) % modes.length]!)
  for (const mode of order) {
    const result = await runOnce(mode, round)
    console.log(JSON.stringify(result))
    runs.push(result)
  }
}

const of = (mode: Mode) => runs.filter((run) => run.mode === mode)
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100
const perRound = (
  mode: Mode,
  key: "acceptedPerSecond" | "deliveredPerSecond" | "cpuMicrosPerMessage" | "mainCpuMicrosPerMessage"
) =>
  Array.from({ length: rounds }, (_, i) => {
    const on = runs.find((run) => run.round === i + 1 && run.mode === mode)!
    const off = runs.find((run) => run.round === i + 1 && run.mode === "off")!
    return ratio(on[key], off[key])
  })
const summary = modes.map((mode) => ({
  mode,
  acceptedPerSecond: median(of(mode).map((run) => run.acceptedPerSecond)),
  deliveredPerSecond: median(of(mode).map((run) => run.deliveredPerSecond)),
  peakRssMb: median(of(mode).map((run) => run.peakRssMb)),
  cpuMicrosPerMessage: median(of(mode).map((run) => run.cpuMicrosPerMessage)),
  mainCpuMicrosPerMessage: median(of(mode).map((run) => run.mainCpuMicrosPerMessage)),
  collectorCpuMicrosPerMessage: median(of(mode).map((run) => run.collectorCpuMicrosPerMessage))
}))
const ratios = modes.filter((mode) => mode !== "off").map((mode) => ({
  against: mode,
  accepted: perRound(mode, "acceptedPerSecond"),
  delivered: perRound(mode, "deliveredPerSecond"),
  cpu: perRound(mode, "cpuMicrosPerMessage"),
  mainCpu: perRound(mode, "mainCpuMicrosPerMessage")
}))

/** A mode's per-round ratios as the table shows them: the median, then each round's. */
const withMedian = (values: ReadonlyArray<number>) => `**${median(values)}** (${values.join(", ")})`

/** A mode's median per-round ratio of `key`, unrounded beyond the median's three places. */
const medianRatio = (mode: Mode, key: "accepted" | "delivered" | "cpu") =>
  median(ratios.find((row) => row.against === mode)![key])
const headline = (["on", "sampled", "parents"] as const).map((mode) =>
  `"${mode}": delivered/s ${medianRatio(mode, "delivered")}, accepted/s ${medianRatio(mode, "accepted")}, ` +
  `server CPU per message ${medianRatio(mode, "cpu")}×`
).join("; ")

const markdown = `# Telemetry: end to end with it off and on

**On ÷ off, median of the per-round ratios over ${rounds} rounds: ${headline}.**

${totalMessages} messages a run (after ${warmUpMessages} warm-up messages), \`/v1/batch\` with ${batchSize} messages a
request from ${senders} senders, SQLite, one loopback receiver. Telemetry on exports spans and the metrics over
OTLP/HTTP (protobuf) to a loopback collector in a process of its own: "on" samples every trace
(\`OTEL_TRACES_SAMPLER=parentbased_traceidratio\`, \`OTEL_TRACES_SAMPLER_ARG=1.0\`); "sampled" one trace in ten (\`0.1\`),
the producers sending no \`traceparent\`, so every span is a root the ratio decides; "parents" is \`0.1\` with every
request carrying a sampled \`traceparent\` (flag 01), which parent-based sampling follows: its attempts are all
exported, only the claim and completion batches' spans (roots) are sampled one in ten. ${rounds} rounds, the modes
alternating, on a 2-core machine shared with other work (the load generator, receiver, collector and server share the two cores; absolute figures vary between
runs, compare the per-round ratios).${
  beforeEntry === undefined
    ? ""
    : beforeOn
    ? " \"before\" is the build before, exporting as \"on\" does."
    : " \"before\" is the build before telemetry existed."
}${modes.includes("unsampled") ? " \"unsampled\" is \"on\" with `OTEL_TRACES_SAMPLER=always_off`." : ""}${
  modes.includes("gzip") ? " \"gzip\" is \"on\" with `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`." : ""
}${modes.includes("json") ? " \"json\" is \"on\" with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`." : ""}

| mode | accepted/s (median) | delivered/s (median) | server CPU µs/message (median) | of which main thread | peak RSS (MB) | collector CPU µs/message |
|---|---|---|---|---|---|---|
${
  summary.map((row) =>
    `| ${row.mode} | ${row.acceptedPerSecond} | ${row.deliveredPerSecond} | ${row.cpuMicrosPerMessage} | ` +
    `${row.mainCpuMicrosPerMessage} | ${row.peakRssMb} | ${row.collectorCpuMicrosPerMessage} |`
  ).join("\n")
}

Per-round ratios against "off" (the same round), their median first:

| mode | accepted | delivered | server CPU per message | main thread's |
|---|---|---|---|---|
${
  ratios.map((row) =>
    `| ${row.against} / off | ${withMedian(row.accepted)} | ${withMedian(row.delivered)} | ${withMedian(row.cpu)} | ` +
    `${withMedian(row.mainCpu)} |`
  ).join("\n")
}

Every run:

| round | mode | accepted/s | delivered/s | server CPU µs/message | of which main thread | peak RSS (MB) | spans received | collector CPU µs/message |
|---|---|---|---|---|---|---|---|---|
${
  runs.map((run) =>
    `| ${run.round} | ${run.mode} | ${run.acceptedPerSecond} | ${run.deliveredPerSecond} | ${run.cpuMicrosPerMessage} | ` +
    `${run.mainCpuMicrosPerMessage} | ${run.peakRssMb} | ${run.spans} | ${run.collectorCpuMicrosPerMessage} |`
  ).join("\n")
}
`
console.log(markdown)
writeResults("telemetry", markdown, { totalMessages, rounds, runs, summary, ratios })
