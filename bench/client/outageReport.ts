/** The results of the client outage benchmark (bench/client/outage.ts) as markdown. */
import type { OutageClientKind } from "./outageClient.js"

/** One client at one rate. Times in ms: `…Ms` since "go" unless named as between two moments. */
export interface OutageRun {
  readonly client: OutageClientKind
  readonly rate: number
  readonly calls: number
  /** Distinct message ids the sink received from the server. */
  readonly delivered: number
  readonly lost: number
  /** What the client itself reported as not delivered, by kind. */
  readonly reportedLost: Record<string, number>
  readonly acknowledged: number
  readonly peakRssBytes: number
  readonly baselineRssBytes: number
  readonly serverStoppedWith: number | string
  readonly restartReadyMs: number
  readonly firstSuccessMs: number | undefined
  readonly emptyMs: number | undefined
  readonly firstSuccessToEmptyMs: number | undefined
  readonly restartToEmptyMs: number | undefined
  readonly closeMs: number
  readonly statuses: ReadonlyArray<string>
}

export interface OutageReport {
  readonly date: string
  readonly node: string
  readonly cpus: number
  readonly loadAverage: { readonly before: number; readonly after: number }
  readonly scenario: {
    readonly durationSeconds: number | undefined
    readonly stopAtSeconds: number | undefined
    readonly restartAtSeconds: number | undefined
  }
  readonly runs: ReadonlyArray<OutageRun>
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
const seconds = (millis: number | undefined) => (millis === undefined ? "—" : (millis / 1000).toFixed(1))
const verdict = (met: boolean) => (met ? "met" : "NOT met")

const lostCell = (run: OutageRun) => {
  const kinds = Object.entries(run.reportedLost).map(([kind, count]) => `${count} ${kind}`)
  return kinds.length === 0 ? String(run.lost) : `${run.lost} (${kinds.join(", ")})`
}

const goals = (report: OutageReport) =>
  [...new Set(report.runs.map((run) => run.rate))].flatMap((rate) => {
    const ours = report.runs.find((run) => run.rate === rate && run.client === "hookrelay")
    const theirs = report.runs.find((run) => run.rate === rate && run.client === "analytics-node")
    if (ours === undefined || theirs === undefined) return []
    const ratio = ours.peakRssBytes / theirs.peakRssBytes
    const drain = ours.firstSuccessToEmptyMs
    return [
      `| ${rate} | ${ours.lost} — ${verdict(ours.lost === 0)} | ${ratio.toFixed(2)}× — ${verdict(ratio <= 0.5)} | ${
        seconds(drain)
      } s — ${verdict(drain !== undefined && drain <= 5_000)} |`
    ]
  })

export const outageMarkdown = (report: OutageReport) =>
  [
    "# Client outage: hookrelay vs @segment/analytics-node through a server restart",
    "",
    `${report.date}, Node ${report.node}, ${report.cpus} CPUs, one-minute load average ${report.loadAverage.before} before`,
    `and ${report.loadAverage.after} after. Produced by \`npx tsx bench/client/outage.ts\` (\`npm run bench -- client-outage\`).`,
    "",
    `Each client, with its defaults, in its own process on plain \`node\` (sources transpiled), makes un-awaited`,
    `\`track\` calls (each with its own messageId) at the rate for ${report.scenario.durationSeconds} s, then closes`,
    "(`close()` / `closeAndFlush()`, their default timeouts). They go to the hookrelay server on SQLite (on plain `node`),",
    `which gets SIGTERM at +${report.scenario.stopAtSeconds} s and is started again at +${report.scenario.restartAtSeconds} s`,
    "on the same data and port; the server delivers each message as a webhook to a sink in another process, which",
    "counts distinct message ids: *delivered* is that count once it stops growing, *lost* the calls not in it (the",
    "client's own reports of failures or drops in brackets). Peak RSS is sampled every 5 ms in the client's process.",
    "",
    "*First success*: for hookrelay, its `Reachable` status (the first probe that succeeded); analytics-node has no",
    "probe, so its first delivery acknowledged (a `track` callback without error) after the restart stands for it.",
    "*Empty*: for hookrelay, the first 5 ms sample after `Reachable` with `stats().held === 0` (nothing queued or being",
    "sent; while calls are still being made, the first moment the backlog is gone), or the end of `close()` when the",
    "queue first empties with the last outcome; for analytics-node, its last delivery acknowledged. *Restart ready*:",
    "the restarted server's first 200 on `/readyz`. Times are from the first call (+s) or between the two moments named.",
    "",
    "| client | calls/s | calls | delivered | lost | peak RSS (MB) | RSS at start (MB) | restart ready (+s) | first success (+s) | empty (+s) | first success → empty (s) | restart ready → empty (s) | close (s) |",
    "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...report.runs.map((run) =>
      `| ${run.client} | ${run.rate} | ${run.calls} | ${run.delivered} | ${lostCell(run)} | ${mb(run.peakRssBytes)} | ${
        mb(run.baselineRssBytes)
      } | ${seconds(run.restartReadyMs)} | ${seconds(run.firstSuccessMs)} | ${seconds(run.emptyMs)} | ${
        seconds(run.firstSuccessToEmptyMs)
      } | ${seconds(run.restartToEmptyMs)} | ${seconds(run.closeMs)} |`
    ),
    "",
    "Goals, for hookrelay with its defaults:",
    "",
    "| calls/s | nothing lost | peak RSS ≤ 0.5× analytics-node's | empty ≤ 5 s after the first successful probe |",
    "|---:|---|---|---|",
    ...goals(report),
    "",
    "hookrelay's statuses, per run:",
    "",
    ...report.runs.filter((run) => run.client === "hookrelay").map((run) =>
      `- ${run.rate} calls/s: ${run.statuses.length === 0 ? "none" : run.statuses.join(", ")}`
    ),
    ""
  ].join("\n")
