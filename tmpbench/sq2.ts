import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeJobIds } from "../src/store/Rows.js"
import { loadDriver } from "../src/store/SqliteDriver.js"
import { prepareTransactions, sqliteInsertAttempts } from "../src/store/SqliteTransactions.js"
import * as StoreLayers from "../src/store/Store.js"
import { Store } from "../src/store/Store.js"

const variant = process.argv[2] ?? "base"
const dir = mkdtempSync(join(tmpdir(), "sq-"))
const filename = join(dir, "hookrelay.db")
const main = async () => {
  const rt = ManagedRuntime.make(StoreLayers.layerSqlite({ filename, checkpoints: false }))
  await rt.runPromise(Effect.flatMap(Store, (s) => s.upsertSource({ id: "bench", writeKey: "k", webhooks: { enabled: true, endpoints: [{ url: "http://127.0.0.1:9/x" }] } }, Date.now())))
  await rt.dispose()
  const db = new (loadDriver().Database)(filename)
  for (const p of ["journal_mode = WAL", "synchronous = NORMAL", "cache_size = -32000", "temp_store = MEMORY", "wal_autocheckpoint = 10000"]) db.pragma(p)
  if (variant === "noleasedidx") db.prepare("DROP INDEX jobs_leased").run()
  if (variant === "nodeliveredidx") db.prepare("DROP INDEX jobs_delivered").run()
  if (variant === "noattemptsidx") db.prepare("DROP INDEX attempts_job").run()
  const tx = prepareTransactions(db, makeJobIds())
  const body = Buffer.from(JSON.stringify({ type: "track", event: "Order Completed", properties: { orderId: "order-1", revenue: 12.5, currency: "EUR" }, context: { ip: "203.0.113.7" }, userId: "user-1", messageId: "x".repeat(36), receivedAt: "2026-11-21T12:00:00.000Z", timestamp: "2026-11-21T12:00:00.000Z" }))
  const N = 60000
  for (let i = 0; i < N; i += 100) {
    tx.enqueue({ sourceId: "bench", entries: Array.from({ length: 100 }, (_, k) => ({ messageId: `m-${i + k}`, body, userId: "user-1", type: "track", event: "Order Completed" })), now: 1_000_000 + i, options: undefined })
  }
  const claimIds = db.prepare(`UPDATE jobs SET status = 'delivering', lease_owner = ?, lease_expires_at = ? WHERE id IN (SELECT id FROM jobs WHERE status = 'pending' AND next_due_at <= ? ORDER BY next_due_at LIMIT ?) RETURNING id`)
  const selectOnly = db.prepare(`SELECT id, source_id, message_id, user_id, kind, body, created_at, first_attempt_at, next_due_at, attempts, endpoint_state, lease_expires_at FROM jobs WHERE status = 'pending' AND next_due_at <= ? AND id > ? ORDER BY next_due_at, id LIMIT ?`)
  const ins = db.prepare(sqliteInsertAttempts)
  let claimMs = 0, completeMs = 0, n = 0, last = ""
  const tclaim = db.transaction((f: () => any) => f())
  for (let round = 0; round < N / 128; round++) {
    let s = performance.now()
    let jobs: Array<{ id: string }>
    if (variant === "idsonly") jobs = tclaim(() => claimIds.all("me", 2_060_000, 2_000_000, 128))
    else if (variant === "selectonly") { jobs = selectOnly.all(2_000_000, last, 128); last = jobs.at(-1)?.id ?? last }
    else jobs = tx.claim({ owner: "me", now: 2_000_000, limit: 128, leaseMs: 60000, excludeSourceIds: [], expired: false })
    claimMs += performance.now() - s
    if (jobs.length === 0) break
    n += jobs.length
    s = performance.now()
    if (variant === "attemptsonly") {
      tclaim(() => ins.run(JSON.stringify(jobs.map((j) => [j.id, "http://127.0.0.1:9/x", 1, 2_000_050, 1, 200, null, "success", "ok"]))))
    } else if (variant !== "selectonly") tx.complete({ owner: "me", completions: jobs.map((j) => ({ _tag: "Delivered" as const, jobId: j.id, at: 2_000_100, firstAttemptAt: 2_000_050 })), attempts: variant === "noattempts" ? [] : jobs.map((j) => ({ jobId: j.id, url: "http://127.0.0.1:9/x", attempt: 1, startedAt: 2_000_050, durationMs: 1, statusCode: 200, error: null, outcome: "success" as const, responseSnippet: "ok" })) })
    completeMs += performance.now() - s
  }
  console.log(variant.padEnd(16), "claim µs/job", (claimMs * 1000 / n).toFixed(1), "complete µs/job", (completeMs * 1000 / n).toFixed(1))
  db.close()
}
main()
