/**
 * Audience sync benchmark (REFERENCE §6): a sync of 100 000 members on SQLite (and on PostgreSQL when
 * DATABASE_URL is set) — the first sync (100 000 identify jobs) and a 1 % diff sync (1 % of the
 * members leave, as many join) — in seconds and peak RSS (`process.memoryUsage().rss` sampled
 * every 20 ms, the whole process: runtime, the membership arrays and the sync; the process measured is a child,
 * compiled, on plain node, as `npm start` runs the server, without tsx's loader). While each sync
 * runs, a probe ingests one message every 5 ms through the same store, and its commit latency is
 * reported: how long ingest waits behind a sync (the reason syncs commit chunk by chunk).
 *
 *   npx tsx bench/audiences.ts [--members 100000] [--diff 0.01] [--chunk 1000] [--read 5000]
 *
 * Targets: first sync < 5 s, diff sync < 2 s, peak RSS < 300 MB.
 */
import { Effect, Fiber, Layer, ManagedRuntime } from "effect"
import { fork } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { defaultChunkSize, defaultReadSize, makeAudienceSync } from "../src/audiences/AudienceSync.js"
import { AudienceMembers } from "../src/store/AudienceMembers.js"
import { Outbox } from "../src/store/Outbox.js"
import { OutboxSignal } from "../src/store/OutboxSignal.js"
import * as OutboxSignalLayer from "../src/store/OutboxSignal.js"
import { Sources } from "../src/store/Sources.js"
import * as StoreLayers from "../src/store/Store.js"
import { transpileForNode } from "./support/compile.js"
import { arg, dropPgSchema, mb, pgNotRun, pgUrl, sampleRss, writeResults } from "./support/processes.js"

const memberCount = arg("members", 100_000)
const diffShare = arg("diff", 0.01)
const chunkSize = arg("chunk", defaultChunkSize)
const readSize = arg("read", defaultReadSize)
const targets = { firstSeconds: 5, diffSeconds: 2, rssMb: 300 }

interface Phase {
  readonly seconds: number
  readonly peakRssMb: number
  readonly result: { readonly added: number; readonly removed: number; readonly unchanged: number }
  readonly jobsQueued: number
  readonly ingestProbe: {
    readonly commits: number
    readonly p50Ms: number
    readonly p99Ms: number
    readonly maxMs: number
  }
}

interface Run {
  readonly database: "sqlite" | "postgresql"
  readonly baselineRssMb: number
  readonly first: Phase
  readonly diff: Phase
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))]!

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits

/** Ingests one message every 5 ms until `stop.done`; records each commit's latency in ms. */
const ingestProbe = (latencies: Array<number>, stop: { done: boolean }) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    while (!stop.done) {
      const started = performance.now()
      yield* outbox.enqueue(
        "probe",
        [{ messageId: `probe-${randomUUID()}`, userId: "probe", body: new TextEncoder().encode("{}") }],
        Date.now(),
        { countApiCall: false }
      )
      latencies.push(performance.now() - started)
      yield* Effect.sleep("5 millis")
    }
  })

const run = async (database: Run["database"]): Promise<Run> => {
  const directory = mkdtempSync(join(tmpdir(), "hookrelay-bench-audiences-"))
  const schema = `bench_audiences_${process.pid}`
  const store = database === "sqlite"
    ? StoreLayers.layerSqlite({ directory })
    : StoreLayers.layerPg({ url: pgUrl()!, schema })
  const runtime = ManagedRuntime.make(Layer.merge(store, OutboxSignalLayer.layer))
  try {
    await runtime.runPromise(Effect.gen(function*() {
      const sources = yield* Sources
      yield* sources.upsertSource({
        id: "web",
        writeKey: "wk_bench_audiences",
        webhooks: { enabled: true, sharedSecret: "s3cret", endpoints: [{ url: "https://example.com/hook" }] }
      }, Date.now())
    }))
    const members = Array.from({ length: memberCount }, () => `user_${randomUUID()}`)
    const changed = Math.round(memberCount * diffShare)
    const next = [...members.slice(changed), ...Array.from({ length: changed }, () => `user_${randomUUID()}`)]
    global.gc?.()
    const baselineRssMb = mb(process.memoryUsage().rss)

    const pending = () =>
      runtime.runPromise(Effect.map(Effect.flatMap(Outbox, (outbox) => outbox.backlog()), (b) => b.pending))
    const phase = async (userIds: ReadonlyArray<string>): Promise<Phase> => {
      global.gc?.()
      const pendingBefore = await pending()
      const latencies: Array<number> = []
      const stop = { done: false }
      const probe = runtime.runFork(ingestProbe(latencies, stop))
      const rss = sampleRss()
      const started = performance.now()
      const result = await runtime.runPromise(Effect.gen(function*() {
        const members = { sources: yield* Sources, members: yield* AudienceMembers }
        const sync = makeAudienceSync(members, yield* OutboxSignal, { chunkSize, readSize })
        return yield* sync.syncAudience("web", "Bench Members", userIds)
      }))
      const seconds = (performance.now() - started) / 1000
      const peak = rss.stop()
      stop.done = true
      await runtime.runPromise(Fiber.join(probe))
      const pendingAfter = await pending()
      const sorted = latencies.sort((a, b) => a - b)
      return {
        seconds: round(seconds),
        peakRssMb: mb(peak),
        result: { added: result.added, removed: result.removed, unchanged: result.unchanged },
        jobsQueued: pendingAfter - pendingBefore - latencies.length,
        ingestProbe: {
          commits: sorted.length,
          p50Ms: round(percentile(sorted, 0.5)),
          p99Ms: round(percentile(sorted, 0.99)),
          maxMs: round(sorted[sorted.length - 1] ?? 0)
        }
      }
    }

    const first = await phase(members)
    const diff = await phase(next)
    return { database, baselineRssMb, first, diff }
  } finally {
    await runtime.dispose()
    rmSync(directory, { recursive: true, force: true })
    if (database === "postgresql") await dropPgSchema(schema)
  }
}

/** The runs, measured here: SQLite, then PostgreSQL when DATABASE_URL is set. */
const measure = async (): Promise<Array<Run>> => {
  const runs: Array<Run> = [await run("sqlite")]
  if (pgUrl() !== undefined) runs.push(await run("postgresql"))
  return runs
}

/**
 * The runs, measured in a child process compiled to plain JavaScript (`transpileForNode`), as the backlog benchmark
 * runs its dispatcher: the RSS measured is what a deployed server's process holds, not tsx's loader besides.
 */
const measureCompiled = async (): Promise<Array<Run>> => {
  const compiled = await transpileForNode("hookrelay-audiences-bench", ["src"], [
    "bench/audiences.ts",
    "bench/support/compile.ts",
    "bench/support/processes.ts"
  ])
  const child = fork(join(compiled, "bench", "audiences.js"), process.argv.slice(2), {
    execArgv: ["--expose-gc"],
    env: { ...process.env, AUDIENCES_MEASURE: "1" },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  return new Promise((resolve, reject) => {
    let runs: Array<Run> | undefined
    child.on("message", (message) => {
      runs = message as Array<Run>
    })
    child.once("error", reject)
    child.once(
      "exit",
      (code) =>
        runs !== undefined && code === 0
          ? resolve(runs)
          : reject(new Error(`the measuring process exited with ${code}`))
    )
  })
}

const main = async () => {
  const load = loadavg().map((value) => round(value, 1))
  const runs = await measureCompiled()
  if (pgUrl() === undefined) console.error(pgNotRun)
  const sqlite = runs[0]!
  const pass = {
    first: sqlite.first.seconds < targets.firstSeconds,
    diff: sqlite.diff.seconds < targets.diffSeconds,
    rss: Math.max(sqlite.first.peakRssMb, sqlite.diff.peakRssMb) < targets.rssMb
  }
  const row = (r: Run, name: "first" | "diff") => {
    const p = r[name]
    return `| ${r.database} | ${
      name === "first" ? "first sync" : `${diffShare * 100} % diff`
    } | ${p.seconds} | ${p.peakRssMb} | ${p.result.added} / ${p.result.removed} / ${p.result.unchanged} | ${p.jobsQueued} | ${p.ingestProbe.p50Ms} / ${p.ingestProbe.p99Ms} / ${p.ingestProbe.maxMs} |`
  }
  const markdown = `# Audience sync benchmark

${new Date().toISOString()}, Node ${process.version}, ${cpus().length} cores, load average at the start ${
    load.join(" / ")
  } (a shared machine: expect ±30 % between runs). Produced by \`npx tsx bench/audiences.ts\`
(\`npm run bench -- audiences\`).

One audience of ${memberCount} members (ids \`user_<uuid>\`, 41 characters), one source whose webhook destination
is enabled (nothing is delivered: the dispatcher is not running, the identify jobs stay in the outbox). First sync:
an empty audience gets every member (one identify job each). Diff sync: ${diffShare * 100} % of the members leave and
as many join. Chunks of ${chunkSize} members per write transaction, reads of ${readSize}.

Peak RSS is the whole measuring process, sampled every 20 ms: a child process compiled to plain JavaScript, on plain
node, as \`npm start\` runs the server (run under tsx in the benchmark's own process, as until 2026-11-27, it held
~55–75 MB more: tsx's loader). Its baseline before the syncs (the store open with its threads, the two membership
arrays built, after a GC) is ${sqlite.baselineRssMb} MB on SQLite; above it is the sync, most of it garbage V8 has not collected yet (a forced GC
during a sync finds the live heap flat at ≈ 45 MB). Ingest probe: one message committed every 5 ms through
the same store during the sync; its commit latency, p50 / p99 / max, is how long ingest waits behind a sync.

| store | sync | seconds | peak RSS (MB) | added / removed / unchanged | jobs queued | ingest probe ms (p50 / p99 / max) |
|---|---|---:|---:|---|---:|---|
${runs.flatMap((r) => [row(r, "first"), row(r, "diff")]).join("\n")}

Targets (SQLite): first sync < ${targets.firstSeconds} s (${
    pass.first ? "met" : "MISSED"
  }), diff sync < ${targets.diffSeconds} s (${pass.diff ? "met" : "MISSED"}), peak RSS < ${targets.rssMb} MB (${
    pass.rss ? "met" : "MISSED"
  }).${runs.length === 1 ? `\n\n${pgNotRun}` : ""}
`
  writeResults("audiences", markdown, {
    date: new Date().toISOString(),
    node: process.version,
    loadAverage: load,
    memberCount,
    diffShare,
    chunkSize,
    readSize,
    targets,
    pass,
    runs
  })
  console.log(markdown)
}

if (process.env.AUDIENCES_MEASURE === "1") {
  process.send!(await measure())
  process.disconnect()
} else {
  await main()
}
