/**
 * Ingest latency while retention purges (SQLite store alone, no HTTP): fills a fresh file store with `jobs`
 * delivered jobs (each with one attempt) finished long ago, then runs `purgeDelivered` while one 10-message
 * `enqueue` starts every 10 ms (the end-to-end benchmark's steady load), and prints the purge's duration and the
 * enqueues' p50/p99/max next to the same load without a purge.
 *
 *   npx tsx bench/support/retentionStall.ts [jobs=100000]
 */
import { Effect, Fiber } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Outbox } from "../../src/store/Outbox.js"
import { Purge } from "../../src/store/Purge.js"
import { Sources } from "../../src/store/Sources.js"
import { layerSqlite } from "../../src/store/Store.js"
import { percentile } from "./percentile.js"

const jobs = Number(process.argv[2] ?? 100_000)
const directory = mkdtempSync(join(tmpdir(), "hookrelay-retention-stall-"))
const body = new TextEncoder().encode(JSON.stringify({ type: "track", event: "Order Completed", userId: "u" }))

const program = Effect.gen(function*() {
  const sources = yield* Sources
  const outbox = yield* Outbox
  const purge = yield* Purge
  yield* sources.upsertSource({ id: "s", writeKey: "k" }, 0)
  for (let done = 0; done < jobs; done += 500) {
    const ids = Array.from({ length: 500 }, (_, i) => `old-${done + i}`)
    yield* outbox.enqueue("s", ids.map((messageId) => ({ messageId, body })), 1)
    const claimed = yield* outbox.claimDue("w", 2, 500, 60_000)
    yield* outbox.completeMany(
      "w",
      claimed.map((job) => ({ _tag: "Delivered" as const, jobId: job.id, at: 3, firstAttemptAt: 3 })),
      claimed.map((job) => ({
        jobId: job.id,
        url: "https://example.com/hook",
        attempt: 1,
        startedAt: 3,
        durationMs: 1,
        statusCode: 200,
        error: null,
        outcome: "success" as const,
        responseSnippet: null
      }))
    )
  }
  let batch = 0
  const steady = (seconds: number) =>
    Effect.gen(function*() {
      const latencies: Array<number> = []
      const start = performance.now()
      for (let i = 0; i < seconds * 100; i++) {
        const wait = start + i * 10 - performance.now()
        if (wait > 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, wait)))
        const ids = Array.from({ length: 10 }, (_, k) => `new-${batch}-${k}`)
        batch += 1
        const at = performance.now()
        yield* outbox.enqueue("s", ids.map((messageId) => ({ messageId, body })), Date.now())
        latencies.push(performance.now() - at)
      }
      return latencies
    })
  const report = (label: string, latencies: Array<number>) =>
    console.log(
      `${label}: enqueue p50 ${percentile(latencies, 50).toFixed(2)} p99 ${percentile(latencies, 99).toFixed(2)} max ${
        Math.max(...latencies).toFixed(2)
      } ms`
    )
  report("no purge", yield* steady(3))
  const purgeStart = performance.now()
  let purgeSeconds = 0
  const purging = yield* Effect.forkChild(
    Effect.tap(
      purge.purgeDelivered(1_000),
      () => Effect.sync(() => purgeSeconds = (performance.now() - purgeStart) / 1000)
    )
  )
  const during = yield* steady(3)
  const purged = yield* Fiber.join(purging)
  console.log(`purged ${purged} delivered jobs in ${purgeSeconds.toFixed(2)} s`)
  report("during the purge", during)
})

void Effect.runPromise(Effect.scoped(Effect.provide(program, layerSqlite({ directory })))).finally(() =>
  rmSync(directory, { recursive: true, force: true })
)
