/**
 * What a deployment costs (docs/DEPLOYMENT.md): 1, 2 and 3 server processes on one PostgreSQL schema, alternated,
 * delivered/s and CPU per delivered job summed over the processes (their own, from /proc: ingest included) for an
 * endpoint without a limit and one limited to 100/s; the statements on the outbox (claims, completions, lease
 * renewals: scans of `jobs`) and the endpoint share ran (from `pg_stat_user_tables`). Results in
 * bench/results/replicas.md.
 *
 *   DATABASE_URL=postgres://… npx tsx bench/replicaGuards.ts [--messages 10000] [--rounds 2]
 */
import { readFileSync, writeFileSync } from "node:fs"
import { connectSql } from "../test/support/postgres.js"
import {
  putSource,
  replicaWriteKey,
  sleep,
  startReceiver,
  startReplica,
  stopReplica,
  waitUntil
} from "../test/support/replicas.js"
import { postBatch, type ServerProcess } from "../test/support/serverProcess.js"

const databaseUrl = process.env.DATABASE_URL ?? ""
const ticksPerMs = 100 / 1000

/** User and system CPU of a process so far, in ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
const cpuMillis = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) / ticksPerMs
}

const run = async (replicas: number, messages: number, endpoint: Record<string, unknown>, label: string) => {
  const schema = `bench_guards_${process.pid}_${Date.now()}`
  const sql = await connectSql(databaseUrl)
  await sql.query(`CREATE SCHEMA ${schema}`)
  const url = new URL(databaseUrl)
  url.searchParams.set("options", `-c search_path=${schema}`)
  const receiver = await startReceiver()
  const servers: Array<ServerProcess> = []
  try {
    for (let i = 0; i < replicas; i++) servers.push(await startReplica({ databaseUrl: url.toString() }))
    await putSource(servers[0]!, receiver.url, endpoint)
    await sleep(1_000)
    const stats = async () => {
      const { rows } = await sql.query<{ relname: string; writes: string; scans: string }>(
        `SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::text AS writes, (seq_scan + coalesce(idx_scan, 0))::text AS scans
         FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('endpoint_rates', 'endpoint_circuits', 'jobs')`,
        [schema]
      )
      return Object.fromEntries(
        rows.map((row) => [row.relname, { writes: Number(row.writes), scans: Number(row.scans) }])
      )
    }
    const cpuBefore = servers.map((server) => cpuMillis(server.child.pid!))
    const statsBefore = await stats()
    const startedAt = Date.now()
    for (let i = 0; i < messages; i += 100) {
      const batch = Array.from({ length: Math.min(100, messages - i) }, (_, j) => ({
        type: "track",
        userId: "u",
        event: "Bench",
        messageId: `bench-${i + j}`
      }))
      const status = await postBatch(servers[(i / 100) % replicas]!.url, replicaWriteKey, batch)
      if (status !== 200) throw new Error(`batch answered ${status}`)
    }
    await waitUntil(() => new Set(receiver.deliveries.map((d) => d.messageId)).size >= messages, "delivered", 120_000)
    const took = Date.now() - startedAt
    const cpu = servers.reduce((sum, server, i) => sum + cpuMillis(server.child.pid!) - cpuBefore[i]!, 0)
    await sleep(1_500)
    const statsAfter = await stats()
    const delta = (table: string, field: "writes" | "scans") =>
      (statsAfter[table]?.[field] ?? 0) - (statsBefore[table]?.[field] ?? 0)
    const seconds = took / 1000
    const row: Row = {
      label,
      replicas,
      messages,
      deliveredPerSecond: messages / seconds,
      cpuMicrosPerJob: (cpu * 1000) / messages,
      outboxScansPerSecond: delta("jobs", "scans") / seconds,
      reservationsPerSecond: delta("endpoint_rates", "writes") / seconds,
      circuitReadsPerSecond: delta("endpoint_circuits", "scans") / seconds
    }
    rows.push(row)
    console.log(
      `${label}, ${replicas} replica(s): ${messages} delivered in ${took} ms; CPU ${
        (cpu / messages).toFixed(3)
      } ms/job ` +
        `(all replicas); rate reservations ${delta("endpoint_rates", "writes")} ` +
        `(${(delta("endpoint_rates", "writes") / seconds).toFixed(1)}/s); circuit reads ` +
        `${delta("endpoint_circuits", "scans")} (${(delta("endpoint_circuits", "scans") / seconds).toFixed(1)}/s); ` +
        `circuit writes ${delta("endpoint_circuits", "writes")}`
    )
  } finally {
    for (const server of servers) await stopReplica(server)
    await receiver.close()
    await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await sql.end()
  }
}

interface Row {
  readonly label: string
  readonly replicas: number
  readonly messages: number
  readonly deliveredPerSecond: number
  readonly cpuMicrosPerJob: number
  readonly outboxScansPerSecond: number
  readonly reservationsPerSecond: number
  readonly circuitReadsPerSecond: number
}
const rows: Array<Row> = []
const option = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const messages = option("messages", 10_000)
const rounds = option("rounds", 2)
for (let round = 0; round < rounds; round++) {
  for (const replicas of [1, 2, 3]) await run(replicas, messages, {}, "no limit")
}
for (const replicas of [1, 2, 3]) await run(replicas, 500, { rateLimit: { perSecond: 100 } }, "100/s")

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const of = (label: string, replicas: number) => rows.filter((row) => row.label === label && row.replicas === replicas)
const oneCpu = median(of("no limit", 1).map((row) => row.cpuMicrosPerJob))
const lines = [
  "# Replicas on one PostgreSQL",
  "",
  `${
    new Date().toISOString()
  }, Node ${process.version}. Produced by \`npx tsx bench/replicaGuards.ts\`: 1, 2 and 3 server`,
  "processes on one schema, alternated round after round; batches of 100 messages posted to the processes in turn, one",
  "loopback receiver; delivered/s from the first post to the last delivery; CPU per delivered job summed over the",
  "processes (ingest included); statements per second from `pg_stat_user_tables` (scans of `jobs`: claims, completions,",
  "lease renewals; writes of `endpoint_rates`: rate reservations; scans of `endpoint_circuits`: the guards' follow read).",
  "",
  "| endpoint | replicas | messages | delivered/s | CPU µs/job (all) | × one replica | jobs scans/s | reservations/s | circuit reads/s |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((row) =>
    `| ${row.label} | ${row.replicas} | ${row.messages} | ${row.deliveredPerSecond.toFixed(0)} | ${
      row.cpuMicrosPerJob.toFixed(0)
    } | ${row.label === "no limit" ? `${(row.cpuMicrosPerJob / oneCpu).toFixed(2)}×` : ""} | ${
      row.outboxScansPerSecond.toFixed(1)
    } | ${row.reservationsPerSecond.toFixed(1)} | ${row.circuitReadsPerSecond.toFixed(1)} |`
  ),
  "",
  `Medians without a limit, CPU µs per job: ${
    [1, 2, 3].map((n) => `${n} → ${median(of("no limit", n).map((row) => row.cpuMicrosPerJob)).toFixed(0)}`).join(
      ", "
    )
  } (goal: several replicas ≤ 1.1× one).`,
  ""
]
writeFileSync(new URL("results/replicas.md", import.meta.url), lines.join("\n"))
console.log(lines.join("\n"))
