/**
 * Endpoint health benchmark: a failing endpoint must be nearly free. The compiled server on SQLite, two sources:
 * `healthy` posting to a loopback sink in its own process, `failing` posting to a port where nobody listens.
 *
 * 1. baseline: `--jobs` healthy jobs queued, the failing source absent: healthy delivered/s;
 * 2. with the failing source's `--failing` jobs queued too (its circuit opens after 10 refused connects): healthy
 *    delivered/s, and the ratio to 1 (target ≥ 0.9);
 * 3. once the healthy jobs are done, the server's CPU over `--idle` seconds while only the failing backlog waits
 *    (target < 5 % of one core).
 * Rounds alternate baseline and mixed runs. The outbox is filled before the server starts (not part of the figures).
 *
 *   node --expose-gc --import tsx bench/endpointHealth.ts [--jobs 20000] [--failing 100000] [--idle 20] [--rounds 2]
 */
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { deliveredBody, encodeBody } from "../src/domain/DeliveredBody.js"
import type { SourceConfig } from "../src/domain/Settings.js"
import { stampMessage } from "../src/domain/Stamp.js"
import { Outbox } from "../src/store/Outbox.js"
import { Sources } from "../src/store/Sources.js"
import * as StoreLayers from "../src/store/Store.js"
import { closedPortUrl } from "./support/closedPort.js"
import { arg, sleep, startSink, waitFor, writeResults } from "./support/processes.js"
import { buildServer, processCpuMicros, startHookrelay } from "./support/servers.js"

const healthyJobs = arg("jobs", 20_000)
const failingJobs = arg("failing", 100_000)
const idleSeconds = arg("idle", 20)
const rounds = arg("rounds", 3)

const body = (i: number) =>
  encodeBody(deliveredBody(stampMessage(
    { type: "track", userId: `user-${i % 1000}`, event: "Order Completed", messageId: `bench-${i}` },
    { receivedAt: Date.now(), generatedMessageId: `bench-${i}` }
  )))

// The sources are stored with their jobs: the dispatcher may claim before provisioning has run.
const fill = (directory: string, sources: ReadonlyArray<SourceConfig>, counts: Record<string, number>) => {
  const runtime = ManagedRuntime.make(StoreLayers.layerSqlite({ directory }))
  return runtime.runPromise(Effect.gen(function*() {
    const stored = yield* Sources
    const outbox = yield* Outbox
    for (const source of sources) yield* stored.upsertSource(source, Date.now())
    for (const [sourceId, count] of Object.entries(counts)) {
      for (let start = 0; start < count; start += 500) {
        const size = Math.min(500, count - start)
        yield* outbox.enqueue(
          sourceId,
          Array.from({ length: size }, (_, k) => ({ messageId: `${sourceId}-${start + k}`, body: body(start + k) })),
          Date.now(),
          { countApiCall: false }
        )
      }
    }
  })).finally(() => runtime.dispose())
}

interface RunResult {
  readonly healthyPerSecond: number
  /** Server CPU while only the failing backlog waits, in % of one core (mixed runs). */
  readonly idleCpuPercent?: number | undefined
}

const run = async (
  sinkUrl: string,
  failingUrl: string,
  withFailing: boolean,
  sink: Awaited<ReturnType<typeof startSink>>
) => {
  const directory = mkdtempSync(join(tmpdir(), "hookrelay-bench-health-"))
  const sources = [{ id: "healthy", writeKey: "wk_healthy_0123456789", url: sinkUrl }]
  if (withFailing) sources.push({ id: "failing", writeKey: "wk_failing_0123456789", url: failingUrl })
  const configs: Array<SourceConfig> = sources.map((source) => ({
    id: source.id,
    writeKey: source.writeKey,
    webhooks: { enabled: true, endpoints: [{ url: source.url }] }
  }))
  const config = join(directory, "config.json")
  writeFileSync(config, JSON.stringify({ sources: configs }))
  const data = join(directory, "data")
  await fill(data, configs, withFailing ? { failing: failingJobs, healthy: healthyJobs } : { healthy: healthyJobs })
  sink.reset()
  const server = await startHookrelay({
    env: {
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_DATA_DIR: data,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      DATABASE_URL: ""
    },
    startTimeoutMillis: 120_000
  })
  try {
    const started = performance.now()
    await waitFor(async () => (await sink.stats()).distinct >= healthyJobs, 600_000, 50)
    const healthyPerSecond = healthyJobs / ((performance.now() - started) / 1000)
    if (!withFailing) return { healthyPerSecond } satisfies RunResult
    // Let the last completions and the circuit settle, then measure the server alone with the failing backlog.
    await sleep(3_000)
    const before = processCpuMicros(server.child.pid!)
    const from = performance.now()
    await sleep(idleSeconds * 1000)
    const cpu = processCpuMicros(server.child.pid!) - before
    const idleCpuPercent = (cpu / 1000) / (performance.now() - from) * 100
    return { healthyPerSecond, idleCpuPercent } satisfies RunResult
  } finally {
    await server.stop()
    rmSync(directory, { recursive: true, force: true })
  }
}

const main = async () => {
  buildServer()
  const sink = await startSink()
  const failingUrl = `${await closedPortUrl()}/hook`
  const baseline: Array<number> = []
  const mixed: Array<RunResult> = []
  for (let round = 0; round < rounds; round++) {
    baseline.push((await run(`${sink.url}/hook`, failingUrl, false, sink)).healthyPerSecond)
    mixed.push(await run(`${sink.url}/hook`, failingUrl, true, sink))
    console.log(
      `round ${round + 1}: baseline ${baseline.at(-1)!.toFixed(0)}/s, mixed ${
        mixed.at(-1)!.healthyPerSecond.toFixed(0)
      }/s, idle CPU ${mixed.at(-1)!.idleCpuPercent!.toFixed(2)} %`
    )
  }
  await sink.stop()
  const median = (values: ReadonlyArray<number>) => {
    const sorted = [...values].sort((a, b) => a - b)
    const middle = sorted.length >> 1
    return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  }
  const ratio = median(mixed.map((r) => r.healthyPerSecond)) / median(baseline)
  const idle = Math.max(...mixed.map((r) => r.idleCpuPercent ?? 0))
  const rows = baseline.map((b, i) =>
    `| ${i + 1} | ${b.toFixed(0)} | ${mixed[i]!.healthyPerSecond.toFixed(0)} | ${
      (mixed[i]!.healthyPerSecond / b).toFixed(2)
    } | ${mixed[i]!.idleCpuPercent!.toFixed(2)} |`
  )
  const markdown = [
    "# Endpoint health: a failing endpoint beside a healthy one",
    "",
    `Compiled server on SQLite; \`healthy\`: ${healthyJobs} jobs to a loopback sink (own process); \`failing\`: ` +
    `${failingJobs} jobs to a port that refuses every connection. Baseline and mixed runs alternate. ` +
    "The machine has 2 cores shared with other work: read the ratio, not the absolute rates.",
    "",
    "| round | healthy/s alone | healthy/s beside the failing source | ratio | server CPU, failing backlog only (% of a core) |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    `Median ratio ${ratio.toFixed(2)} (target ≥ 0.9); highest idle CPU ${
      idle.toFixed(2)
    } % over ${idleSeconds} s (target < 5 %).`,
    ""
  ].join("\n")
  writeResults("endpoint-health", markdown, { healthyJobs, failingJobs, idleSeconds, baseline, mixed, ratio, idle })
  console.log(markdown)
}

void main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
