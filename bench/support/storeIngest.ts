/**
 * The SQLite store's ingest path alone, without HTTP: `enqueue` of `batches` batches of `size` messages (about
 * 500 bytes each) into a fresh file store, `concurrency` of them at once, letting the event loop turn between batches as a server does (the
 * checkpoint worker's answers come in then). Prints messages/s, µs per message, the p50/p99/max of one `enqueue`
 * and the size of the WAL file at the end.
 *
 *   [STORE_CHECKPOINTS=commit] [DESTINATIONS=3] npx tsx bench/support/storeIngest.ts [batches=500] [size=100]
 *     [concurrent=1] [pace ms=0]
 *
 * STORE_CHECKPOINTS=commit measures SQLite's own checkpoints on commit instead of the checkpoint thread. DESTINATIONS=n
 * gives each message a job for each of n destinations (one row until claimed, migration 21), as a fanned-out source does.
 */
import { Effect } from "effect"
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { setImmediate } from "node:timers/promises"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import { layerSqlite } from "../../src/store/Store.js"

const directory = mkdtempSync(join(tmpdir(), "hookrelay-store-ingest-"))
const batches = Number(process.argv[2] ?? 500)
const size = Number(process.argv[3] ?? 100)
const concurrency = Number(process.argv[4] ?? 1)
/** With a pace (ms), one batch starts every `pace` ms instead of back to back: the end-to-end bench's steady phase is `2000 10 1 10`. */
const pace = Number(process.argv[5] ?? 0)
const checkpoints = process.env.STORE_CHECKPOINTS === "commit" ? false : undefined
const destinationIds = process.env.DESTINATIONS === undefined
  ? undefined
  : Array.from({ length: Number(process.env.DESTINATIONS) }, (_, i) => `destination-${i}`)
const body = new TextEncoder().encode(JSON.stringify({
  type: "track",
  event: "Order Completed",
  properties: { orderId: "order-1", revenue: 12.5, currency: "EUR" },
  context: { ip: "203.0.113.7", library: { name: "bench", version: "1" } },
  userId: "user-1",
  messageId: "x".repeat(30),
  receivedAt: "2026-01-01T00:00:00.000Z",
  timestamp: "2026-01-01T00:00:00.000Z",
  sentAt: "2026-01-01T00:00:00.000Z",
  originalTimestamp: "2026-01-01T00:00:00.000Z",
  version: 1
}))

const program = Effect.gen(function*() {
  const sources = yield* Sources
  const outbox = yield* Outbox
  yield* sources.upsertSource({ id: "bench", writeKey: "wk" }, 0)
  const times: Array<number> = []
  let n = 0
  const started = performance.now()
  yield* Effect.forEach(Array.from({ length: batches }, (_, b) => b), (b) =>
    Effect.gen(function*() {
      const entries = Array.from({ length: size }, () => {
        n++
        return {
          messageId: `run-${n}-${Math.random()}`,
          userId: `user-${n % 1000}`,
          type: "track",
          body,
          destinationIds
        }
      })
      if (pace > 0) {
        const wait = started + b * pace - performance.now()
        if (wait > 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, wait)))
      }
      const at = performance.now()
      yield* outbox.enqueue("bench", entries, 1_000_000 + b)
      times.push(performance.now() - at)
      yield* Effect.promise(() => setImmediate())
    }), { concurrency, discard: true })
  const total = performance.now() - started
  times.sort((a, b) => a - b)
  const wal = join(directory, "hookrelay.db-wal")
  console.log(
    `${Math.round((n / total) * 1000)} msg/s, ${((total * 1000) / n).toFixed(1)} µs/msg; enqueue p50 ${
      times[times.length >> 1]!.toFixed(2)
    } p99 ${times[Math.floor(times.length * 0.99)]!.toFixed(2)} max ${times[times.length - 1]!.toFixed(2)} ms; WAL ${
      existsSync(wal) ? (statSync(wal).size / 1e6).toFixed(1) : "0"
    } MB`
  )
})

void Effect.runPromise(Effect.provide(program, layerSqlite({ directory, checkpoints }))).finally(() =>
  rmSync(directory, { recursive: true, force: true })
)
