/**
 * Ingest next to a large backlog (SQLite store, dispatcher running, no HTTP ingest): fills a fresh file store with
 * `pending` jobs of one source whose endpoint refuses every connection (127.0.0.1:9), starts the dispatcher (its
 * mailbox fills, so its claims leave that source out), then for 10 s enqueues 10 messages every 20 ms and prints the
 * enqueues' p50/p99/max, the time of one claim that leaves the backlog's source out, and each busy thread's CPU share.
 *
 *   npx tsx bench/support/backlogStall.ts [pending=200000] [--pg]
 *
 * `--pg`: the same on PostgreSQL at DATABASE_URL (a schema of its own, dropped after), with the CPU share of every
 * `postgres` process of this machine in that time.
 */
import { Context, Effect, Layer, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Dispatcher from "../../src/delivery/Dispatcher.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import * as Transport from "../../src/delivery/Transport.js"
import { Outbox } from "../../src/store/Outbox.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import type { StoreServices } from "../../src/store/Store.js"
import { percentile } from "./percentile.js"
import { dropPgSchema, pgNotRun, pgUrl } from "./processes.js"
import { processesMicros, threadTimes } from "./threads.js"

const pending = Number(process.argv[2] ?? 200_000)
const onPg = process.argv.includes("--pg")
if (onPg && pgUrl() === undefined) {
  console.error(pgNotRun)
  process.exit(2)
}
const schema = `backlog_stall_${process.pid}`
const directory = mkdtempSync(join(tmpdir(), "hookrelay-backlog-stall-"))
const body = new TextEncoder().encode(JSON.stringify({ type: "track", event: "Order Completed", userId: "u" }))

const stores = ManagedRuntime.make(
  Layer.mergeAll(Transport.layer({ allowPrivateNetworks: true }), OutboxSignal.layer, Outcomes.layer).pipe(
    Layer.provideMerge(
      onPg ? StoreLayers.layerPg({ url: pgUrl()!, schema }) : StoreLayers.layerSqlite({ directory })
    )
  )
)
const withStore = <A>(f: (store: Context.Context<StoreServices>) => Effect.Effect<A, unknown>) =>
  stores.runPromise(Effect.flatMap(Effect.context<StoreServices>(), f))

try {
  await withStore((store) =>
    Effect.gen(function*() {
      yield* Context.get(store, Sources).upsertSource({
        id: "down",
        writeKey: "down-key",
        webhooks: { enabled: true, endpoints: [{ url: "http://127.0.0.1:9/down" }] }
      }, Date.now())
      for (let start = 0; start < pending; start += 1000) {
        const entries = Array.from({ length: 1000 }, (_, k) => ({ messageId: `backlog-${start + k}`, body }))
        yield* Context.get(store, Outbox).enqueue("down", entries, Date.now(), { countApiCall: false })
      }
    })
  )
  const claimStarted = performance.now()
  await withStore((store) =>
    Context.get(store, Outbox).claimDue("probe", Date.now(), 128, 60_000, {
      excludeSourceIds: ["down"],
      expired: false
    })
  )
  const claimMs = performance.now() - claimStarted

  const context = await stores.context()
  const dispatcher = ManagedRuntime.make(Dispatcher.layer().pipe(Layer.provide(Layer.succeedContext(context))))
  await dispatcher.context()
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const before = threadTimes()
  const postgresBefore = onPg ? processesMicros("postgres") : 0
  const started = performance.now()
  const times: Array<number> = []
  for (let n = 0; performance.now() - started < 10_000; n += 10) {
    const at = performance.now()
    const entries = Array.from({ length: 10 }, (_, k) => ({ messageId: `live-${n + k}`, body }))
    await withStore((store) => Context.get(store, Outbox).enqueue("down", entries, Date.now()))
    times.push(performance.now() - at)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const seconds = (performance.now() - started) / 1000
  const after = threadTimes()
  const postgresShare = onPg ? (processesMicros("postgres") - postgresBefore) / 1e4 / seconds : 0
  await dispatcher.dispose()
  const shares: Array<string> = []
  for (const [tid, { micros, name }] of after) {
    const share = (micros - (before.get(tid)?.micros ?? 0)) / 1e4 / seconds
    if (share >= 1) shares.push(`${name === "main" ? "main" : tid} ${share.toFixed(1)} %`)
  }
  console.log(
    `${onPg ? "PostgreSQL" : "SQLite"}: ${pending} pending jobs of a down endpoint. A claim leaving their source out: ${
      claimMs.toFixed(1)
    } ms. ` +
      `Enqueue of 10 every 20 ms (${times.length}): p50 ${percentile(times, 50).toFixed(2)} ms, ` +
      `p99 ${percentile(times, 99).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms. ` +
      `CPU of the busy threads: ${shares.join(", ")}${onPg ? `; of PostgreSQL: ${postgresShare.toFixed(1)} %` : ""}.`
  )
} finally {
  await stores.dispose()
  rmSync(directory, { recursive: true, force: true })
  if (onPg) await dropPgSchema(schema)
}
