/**
 * What the deployment's circuits and rate limits cost (docs/DEPLOYMENT.md): 1 and 2 server processes on one
 * PostgreSQL schema, CPU per delivered job (the processes' own, from /proc) for an endpoint without a limit and one
 * limited to 100/s, and the statements the endpoint share ran (from `pg_stat_user_tables`).
 *
 *   DATABASE_URL=postgres://… npx tsx bench/replicaGuards.ts
 */
import { readFileSync } from "node:fs"
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
         FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('endpoint_rates', 'endpoint_circuits')`,
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

await run(1, 3_000, {}, "no limit")
await run(2, 3_000, {}, "no limit")
await run(1, 500, { rateLimit: { perSecond: 100 } }, "100/s")
await run(2, 500, { rateLimit: { perSecond: 100 } }, "100/s")
