/**
 * The operator's message log (REFERENCE §12) on a store of `--messages` messages (default 1 000 000) in each store:
 * filled through the store's own `enqueue`, 500 a batch, receipts spread over 24 h (90 % source `web`, 10 % `app`,
 * a filtered message every 20th batch), then about 1 % of the jobs made dead by a direct UPDATE. Then p50/p99 over
 * `--runs` runs (default 200) of: the first page of a source (limit 50); a page of status `dead` over one hour
 * (limit 50, the hour moved each run); the 100th page by cursor (99 pages walked once, the 100th timed each run). With
 * the sizes of the log and its indexes, and ingest accepted/s with and without the log's order by `(source_id, seq)`
 * (the table's key, against a key of seq alone: SQLite a rowid table, PostgreSQL a primary key on seq), alternating
 * fresh stores of `--ingest` messages. Writes bench/results/message-log.{md,json}.
 *
 *   npx tsx bench/messageLog.ts [--messages 1000000] [--runs 200] [--ingest 100000] [--rounds 3]
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { MessageLog } from "../src/store/MessageLog.js"
import type { MessageLogQuery } from "../src/store/MessageLogQuery.js"
import { Outbox } from "../src/store/Outbox.js"
import { loadDriver } from "../src/store/sqlite/SqliteDriver.js"
import { layerPg, layerSqlite, sqliteFileName, type StoreServices } from "../src/store/Store.js"
import { percentile } from "./support/percentile.js"
import { arg, pgNotRun, pgUrl, writeResults } from "./support/processes.js"

const messages = arg("messages", 1_000_000)
const runs = arg("runs", 200)
const ingestMessages = arg("ingest", 100_000)
const rounds = arg("rounds", 3)
const batch = 500
const T0 = 1_763_700_000_000
const day = 24 * 60 * 60 * 1000
const hour = 60 * 60 * 1000
const body = new TextEncoder().encode(JSON.stringify({ type: "track", event: "Order Completed", userId: "u" }))

/** Raw SQL beside the store: the dead jobs' UPDATE, index sizes, the index dropped for the ingest comparison. */
interface Raw {
  readonly run: (statement: string) => Promise<ReadonlyArray<Record<string, unknown>>>
  readonly close: () => Promise<void>
}

const sqliteRaw = (directory: string): Raw => {
  const db = new (loadDriver().Database)(join(directory, sqliteFileName))
  db.pragma("busy_timeout = 10000")
  return {
    run: (statement) => {
      const prepared = db.prepare(statement)
      return Promise.resolve(
        prepared.reader ? prepared.all() as Array<Record<string, unknown>> : (prepared.run(), [])
      )
    },
    close: () => Promise.resolve(void db.close())
  }
}

const pgRaw = (url: string, schema: string): Raw => {
  const layer = PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
  const run = (statement: string) =>
    Effect.runPromise(Effect.scoped(Effect.provide(
      Effect.gen(function*() {
        const sql = yield* PgClient.PgClient
        yield* sql.unsafe(`SET search_path TO ${schema}`)
        return (yield* sql.unsafe(statement)) as ReadonlyArray<Record<string, unknown>>
      }),
      layer
    )))
  return { run, close: () => Promise.resolve() }
}

const entries = (from: number, count: number, filtered: boolean) =>
  Array.from({ length: count }, (_, i) => ({
    messageId: `m-${from + i}`,
    userId: `user-${(from + i) % 5000}`,
    type: "track",
    event: (from + i) % 3 === 0 ? "Order Completed" : "Viewed",
    ...(filtered && i === 0 ? { filtered: true } : { body })
  }))

const timed = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const started = performance.now()
    yield* self
    return performance.now() - started
  })

const stats = (times: ReadonlyArray<number>) => ({
  p50: Math.round(percentile(times, 50) * 100) / 100,
  p99: Math.round(percentile(times, 99) * 100) / 100
})

const fill = Effect.gen(function*() {
  const outbox = yield* Outbox
  const batches = Math.ceil(messages / batch)
  const started = performance.now()
  for (let b = 0; b < batches; b++) {
    const now = T0 + Math.floor((b * day) / batches)
    const sourceId = b % 10 === 9 ? "app" : "web"
    yield* outbox.enqueue(sourceId, entries(b * batch, Math.min(batch, messages - b * batch), b % 20 === 0), now)
  }
  return (performance.now() - started) / 1000
})

const queries = Effect.gen(function*() {
  const log = yield* MessageLog
  const page = (query: MessageLogQuery) => log.listMessages(query)
  const first: Array<number> = []
  const dead: Array<number> = []
  const hundredth: Array<number> = []
  let deadFound = 0
  for (let r = 0; r < runs; r++) {
    first.push(yield* timed(page({ sourceIds: ["web"], limit: 50 })))
    const since = T0 + 1000 + Math.floor(((r * 7919) % 23) * hour)
    const started = performance.now()
    const listed = yield* page({ sourceIds: ["web"], statuses: ["dead"], since, until: since + hour, limit: 50 })
    dead.push(performance.now() - started)
    deadFound += listed.messages.length
  }
  let after: string | undefined
  for (let p = 0; p < 99; p++) after = (yield* page({ sourceIds: ["web"], limit: 50, after })).next ?? undefined
  for (let r = 0; r < runs; r++) hundredth.push(yield* timed(page({ sourceIds: ["web"], limit: 50, after })))
  return {
    firstPage: stats(first),
    deadOverOneHour: { ...stats(dead), meanMessages: Math.round(deadFound / runs) },
    hundredthPage: stats(hundredth)
  }
})

const provide = <A, E>(self: Effect.Effect<A, E, StoreServices>, layer: Layer.Layer<StoreServices, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(self, layer)))

interface Store {
  readonly name: string
  readonly open: () => { layer: Layer.Layer<StoreServices, unknown>; raw: () => Raw; dispose: () => Promise<void> }
  readonly deadUpdate: string
  readonly sizes: string
  /** What takes the log's order by `(source_id, seq)` away, for ingest without it. */
  readonly unordered: ReadonlyArray<string>
}

const sqliteStore: Store = {
  name: "SQLite",
  open: () => {
    const directory = mkdtempSync(join(tmpdir(), "hookrelay-message-log-"))
    return {
      layer: layerSqlite({ directory }),
      raw: () => sqliteRaw(directory),
      dispose: () => Promise.resolve(rmSync(directory, { recursive: true, force: true }))
    }
  },
  deadUpdate:
    `UPDATE jobs SET status = 'dead', finished_at = created_at, attempts = 1 WHERE rowid % 100 = 7 AND status = 'pending'`,
  sizes: `SELECT name, sum(pgsize) AS bytes FROM dbstat
    WHERE name IN ('message_log', 'jobs_dead_by_id', 'jobs') GROUP BY name ORDER BY name`,
  unordered: [
    `DROP TABLE message_log`,
    `CREATE TABLE message_log (seq INTEGER PRIMARY KEY, source_id TEXT NOT NULL, message_id TEXT NOT NULL,
      received_at BIGINT NOT NULL, type TEXT, event TEXT, user_id TEXT, anonymous_id TEXT, job_count INTEGER NOT NULL)`
  ]
}

const pgStore = (url: string): Store => ({
  name: "PostgreSQL",
  open: () => {
    const schema = `hookrelay_bench_log_${Math.random().toString(16).slice(2, 10)}`
    return {
      layer: layerPg({ url, schema, maxConnections: 4 }),
      raw: () => pgRaw(url, schema),
      dispose: () => pgRaw(url, "public").run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).then(() => undefined)
    }
  },
  deadUpdate: `UPDATE jobs SET status = 'dead', finished_at = created_at, attempts = 1
    WHERE abs(hashtext(id)) % 100 = 7 AND status = 'pending'`,
  sizes: `SELECT relname AS name, pg_relation_size(oid) AS bytes FROM pg_class
    WHERE relname IN ('message_log', 'message_log_pkey', 'jobs_dead_by_id', 'jobs')
    AND relnamespace = current_schema()::regnamespace ORDER BY relname`,
  unordered: [
    `ALTER TABLE message_log DROP CONSTRAINT message_log_pkey`,
    `ALTER TABLE message_log ADD PRIMARY KEY (seq)`
  ]
})

const measure = async (store: Store) => {
  const opened = store.open()
  try {
    // The store's layer stays open across the fill, the UPDATE and the queries.
    return await provide(
      Effect.gen(function*() {
        const fillSeconds = yield* fill
        const raw = opened.raw()
        yield* Effect.promise(() => raw.run(store.deadUpdate))
        if (store.name === "PostgreSQL") yield* Effect.promise(() => raw.run(`ANALYZE`))
        const sizes = yield* Effect.promise(() =>
          raw.run(store.sizes).then(
            (rows) => rows.map((row) => ({ name: String(row.name), bytes: Number(row.bytes) })),
            (e: unknown) => [{ error: String(e) }]
          )
        )
        yield* Effect.promise(() => raw.close())
        const results = yield* queries
        return { fillSeconds: Math.round(fillSeconds), sizes, ...results }
      }),
      opened.layer
    )
  } finally {
    await opened.dispose()
  }
}

/** Ingest accepted/s into a fresh store, with or without the log's order by `(source_id, seq)`. */
const ingest = async (store: Store, withIndex: boolean) => {
  const opened = store.open()
  try {
    return await provide(
      Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* outbox.enqueue("web", entries(-1, 1, false), T0)
        if (!withIndex) {
          const raw = opened.raw()
          for (const statement of store.unordered) yield* Effect.promise(() => raw.run(statement))
          yield* Effect.promise(() => raw.close())
        }
        const started = performance.now()
        let accepted = 0
        for (let b = 0; b * batch < ingestMessages; b++) {
          const result = yield* outbox.enqueue(
            b % 10 === 9 ? "app" : "web",
            entries(b * batch, batch, false),
            T0 + b
          )
          accepted += result.accepted
        }
        return Math.round(accepted / ((performance.now() - started) / 1000))
      }),
      opened.layer
    )
  } finally {
    await opened.dispose()
  }
}

const url = pgUrl()
const stores = [sqliteStore, ...(url === undefined ? [] : [pgStore(url)])]
const results: Array<
  { store: string; fillSeconds: number; sizes: unknown; ingest: unknown } & Record<string, unknown>
> = []
for (const store of stores) {
  console.log(`${store.name}: filling ${messages} messages`)
  const listing = await measure(store)
  console.log(JSON.stringify(listing))
  const withIndex: Array<number> = []
  const without: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    withIndex.push(await ingest(store, true))
    without.push(await ingest(store, false))
  }
  const median = (values: Array<number>) => percentile(values, 50)
  const ingestResult = {
    withIndex,
    without,
    ratio: Math.round((median(withIndex) / median(without)) * 1000) / 1000
  }
  console.log(JSON.stringify(ingestResult))
  results.push({ store: store.name, ...listing, ingest: ingestResult })
}

const md = [
  "# Message log",
  "",
  `${messages} messages per store filled through the store's own enqueue (500 a batch, receipts over 24 h, 90 % source`,
  "`web`), about 1 % of jobs made dead by a direct UPDATE; milliseconds over " + runs + " runs, limit 50. The 100th",
  "page: 99 pages walked once, the 100th timed each run. Ingest: accepted/s into fresh stores of " + ingestMessages,
  "messages, with and without the log's order by `(source_id, seq)` (the table's key, against a key of seq alone: SQLite",
  "a rowid table, PostgreSQL a primary key on seq), alternating, " + rounds + " rounds; ratio of medians.",
  "",
  "| store | first page p50/p99 | dead over 1 h p50/p99 (mean found) | 100th page p50/p99 | ingest with / without | ratio |",
  "|---|---|---|---|---|---|",
  ...results.map((r) => {
    const f = r.firstPage as { p50: number; p99: number }
    const d = r.deadOverOneHour as { p50: number; p99: number; meanMessages: number }
    const h = r.hundredthPage as { p50: number; p99: number }
    const i = r.ingest as { withIndex: Array<number>; without: Array<number>; ratio: number }
    return `| ${r.store} | ${f.p50} / ${f.p99} | ${d.p50} / ${d.p99} (${d.meanMessages}) | ${h.p50} / ${h.p99} | ${
      i.withIndex.join(", ")
    } / ${i.without.join(", ")} | ${i.ratio} |`
  }),
  "",
  "Sizes (bytes):",
  "",
  ...results.map((r) => `- ${r.store}: ${JSON.stringify(r.sizes)} (fill ${String(r.fillSeconds)} s)`),
  ...(url === undefined ? ["", pgNotRun] : [])
].join("\n")
writeResults("message-log", `${md}\n`, { messages, runs, results })
console.log(md)
