/**
 * Client outage benchmark: hookrelay's `createClient` and `@segment/analytics-node`, each with its defaults, through a
 * restart of the real hookrelay server, in the same run.
 *
 *   npx tsx bench/client/outage.ts [--rates 500,2000] [--duration 40] [--stop-at 8] [--restart-at 38]
 *
 * Per run (client × rate), each part in a process of its own: the server on SQLite, on plain node as `npm start` runs
 * it (transpiled with the client into node_modules/.cache, a copy that a rebuild of dist/ cannot change mid-run),
 * with a webhook to a sink (bench/support/sink.ts) that counts distinct message ids; the client
 * (bench/client/outageClient.ts) making `track` calls at the rate for the duration, then closing. The server gets SIGTERM at +8 s and is started again at +38 s on the same data and port. Writes
 * bench/results/client-outage.{md,json}.
 */
import { fork } from "node:child_process"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { restartableServer, stablePort } from "../../test/support/outageProcesses.js"
import { transpileForNode } from "../support/compile.js"
import { sleep, startSink, writeResults } from "../support/processes.js"
import { benchSetup } from "../support/servers.js"
import { nextMessage } from "./childProcesses.js"
import type { OutageClientKind, OutageClientReport } from "./outageClient.js"
import { outageMarkdown, type OutageRun } from "./outageReport.js"

const list = (name: string, fallback: string) => {
  const index = process.argv.indexOf(`--${name}`)
  return (index === -1 ? fallback : process.argv[index + 1]!).split(",").map(Number)
}
const rates = list("rates", "500,2000")
const [durationSeconds] = list("duration", "40")
const [stopAtSeconds] = list("stop-at", "8")
const [restartAtSeconds] = list("restart-at", "38")
const clients: ReadonlyArray<OutageClientKind> = ["hookrelay", "analytics-node"]

/** Waits until the sink has `expected` distinct ids, or has received nothing new for 20 s; answers its count. */
const settledDistinct = async (sink: Awaited<ReturnType<typeof startSink>>, expected: number) => {
  let last = -1
  let lastChange = Date.now()
  const deadline = Date.now() + 300_000
  while (true) {
    const { distinct } = await sink.stats()
    if (distinct !== last) lastChange = Date.now()
    last = distinct
    if (distinct >= expected || Date.now() - lastChange > 20_000 || Date.now() > deadline) return distinct
    await sleep(200)
  }
}

const runOne = async (compiled: string, client: OutageClientKind, rate: number): Promise<OutageRun> => {
  const sink = await startSink()
  const setup = benchSetup({ sourceId: "outage", writeKey: "bench", hookUrl: `${sink.url}/hook` })
  const server = restartableServer(await stablePort(), setup.env, [
    "--enable-source-maps",
    join(compiled, "src", "main.js")
  ])
  try {
    await server.start()
    const calls = rate * durationSeconds!
    const child = fork(join(compiled, "bench", "client", "outageClient.js"), [
      client,
      server.url,
      String(rate),
      String(calls)
    ], {
      execArgv: [],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    await nextMessage(child, "ready")
    const done = nextMessage<{ report: OutageClientReport }>(child, "done")
    const go = Date.now()
    child.send({ type: "go" })
    await sleep(stopAtSeconds! * 1000 - (Date.now() - go))
    const stoppedWith = await server.stop("SIGTERM")
    await sleep(restartAtSeconds! * 1000 - (Date.now() - go))
    const restartReadyAt = await server.start()
    const { report } = await done
    await new Promise((resolve) => child.once("exit", resolve))
    const delivered = await settledDistinct(sink, report.made)
    return summarize({ client, rate, report, delivered, stoppedWith, restartReadyAt })
  } finally {
    server.kill()
    await sink.stop()
    setup.remove()
  }
}

const summarize = (run: {
  client: OutageClientKind
  rate: number
  report: OutageClientReport
  delivered: number
  stoppedWith: number | string
  restartReadyAt: number
}): OutageRun => {
  const { report, restartReadyAt } = run
  const fromGo = (at: number | undefined) => (at === undefined ? undefined : at - report.goAt)
  // analytics-node has no probe: its first delivery acknowledged after the restart stands for the first success.
  const firstAckAfterRestart = report.acknowledgedAt.map(([at]) => report.goAt + at).find((at) =>
    at + 100 > restartReadyAt
  )
  const firstSuccessAt = run.client === "hookrelay" ? report.reachableAt : firstAckAfterRestart
  const emptyAt = run.client === "hookrelay" ? report.emptyAt : report.lastAcknowledgedAt
  const between = (from: number | undefined, to: number | undefined) =>
    from === undefined || to === undefined ? undefined : to - from
  return {
    client: run.client,
    rate: run.rate,
    calls: report.made,
    delivered: run.delivered,
    lost: report.made - run.delivered,
    reportedLost: report.lost,
    acknowledged: report.acknowledged,
    peakRssBytes: report.peakRssBytes,
    baselineRssBytes: report.baselineRssBytes,
    serverStoppedWith: run.stoppedWith,
    restartReadyMs: restartReadyAt - report.goAt,
    firstSuccessMs: fromGo(firstSuccessAt),
    emptyMs: fromGo(emptyAt),
    firstSuccessToEmptyMs: between(firstSuccessAt, emptyAt),
    restartToEmptyMs: between(restartReadyAt, emptyAt),
    closeMs: report.closeMillis,
    statuses: report.statuses
  }
}

const main = async () => {
  const compiled = await transpileForNode("hookrelay-client-outage", ["src"], [
    "bench/client/outageClient.ts",
    "bench/client/childProcesses.ts"
  ])
  const loadBefore = loadavg()[0]!
  const runs: Array<OutageRun> = []
  for (const rate of rates) {
    for (const client of clients) {
      const run = await runOne(compiled, client, rate)
      runs.push(run)
      console.log(
        `${client.padEnd(15)} ${rate} calls/s: delivered ${run.delivered} of ${run.calls}, peak RSS ${
          (run.peakRssBytes / 1024 / 1024).toFixed(1)
        } MB, first success → empty ${run.firstSuccessToEmptyMs} ms, restart → empty ${run.restartToEmptyMs} ms`
      )
    }
  }
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: cpus().length,
    loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number(loadavg()[0]!.toFixed(2)) },
    scenario: { durationSeconds, stopAtSeconds, restartAtSeconds, signal: "SIGTERM" },
    goals: {
      lost: "0 with the defaults",
      peakRss: "hookrelay <= 0.5x analytics-node's",
      drain: "hookrelay's queue empty <= 5 s after the first successful probe"
    },
    runs
  }
  writeResults("client-outage", outageMarkdown(report), report)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
