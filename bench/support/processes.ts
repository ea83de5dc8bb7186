import { type ChildProcess, fork } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { isPostgresUrl } from "../../src/store/StoreConfig.js"
import { repoRoot } from "./compile.js"

export { repoRoot }
export const resultsDir = join(repoRoot, "bench", "results")

export interface SinkStats {
  readonly requests: number
  readonly distinct: number
  readonly firstAt: number
  readonly lastAt: number
  /** Only when asked for (`stats(true)`): serializing one entry per message id is work the receiver's machine shares. */
  readonly receipts?: Record<string, number> | undefined
  /** The receiver's own CPU time so far (user + system, µs). */
  readonly cpuMicros: number
}

/** What a sink started with SINK_COUNT_IDS=1 received: each message id's receipts, delete notifications apart. */
export interface SinkCounts {
  readonly counts: Record<string, number>
  readonly deletes: number
  /** Bodies that were not JSON or carried no string `messageId`. */
  readonly unparsed: number
}

export interface Sink {
  readonly url: string
  readonly port: number
  /** Counts; with `receipts` (SINK_RECEIPTS=1), each message id's first receipt time too. */
  readonly stats: (receipts?: boolean) => Promise<SinkStats>
  /** Each message id's receipts (only counted by a sink started with SINK_COUNT_IDS=1). */
  readonly counts: () => Promise<SinkCounts>
  readonly reset: () => void
  readonly stop: () => Promise<void>
  readonly process: ChildProcess
}

/** Starts `bench/support/sink.ts` in a process of its own and waits until it listens. */
export const startSink = (env: Record<string, string> = {}): Promise<Sink> =>
  new Promise((resolve, reject) => {
    const child = fork(join(repoRoot, "bench", "support", "sink.ts"), [], {
      execArgv: ["--import", "tsx"],
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    child.once("error", reject)
    child.once("message", (message: { type: string; port: number }) => {
      const url = `http://127.0.0.1:${message.port}`
      resolve({
        url,
        port: message.port,
        process: child,
        stats: (receipts = false) =>
          new Promise((done) => {
            const onMessage = (reply: { type: string } & SinkStats) => {
              if (reply.type !== "stats") return
              child.off("message", onMessage)
              done(reply)
            }
            child.on("message", onMessage)
            child.send({ type: "stats", receipts })
          }),
        counts: () =>
          new Promise((done) => {
            const onMessage = (reply: { type: string } & SinkCounts) => {
              if (reply.type !== "counts") return
              child.off("message", onMessage)
              done(reply)
            }
            child.on("message", onMessage)
            child.send({ type: "counts" })
          }),
        reset: () => child.send({ type: "reset" }),
        stop: () =>
          new Promise((done) => {
            child.once("exit", () => done())
            child.send({ type: "stop" })
          })
      })
    })
  })

/** Samples this process's RSS until stopped; returns the peak in bytes. */
export const sampleRss = (everyMillis = 20) => {
  let peak = process.memoryUsage.rss()
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }, everyMillis)
  return {
    peak: () => peak,
    stop: () => {
      clearInterval(timer)
      return Math.max(peak, process.memoryUsage.rss())
    }
  }
}

/** A benchmark's numeric option: `--name n`, or `fallback` when it is not given. */
export const arg = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`)
  return index === -1 ? fallback : Number(process.argv[index + 1])
}

export const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

export const waitFor = async (condition: () => Promise<boolean>, timeoutMillis: number, pollMillis = 20) => {
  const deadline = performance.now() + timeoutMillis
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error("benchmark timed out")
    await sleep(pollMillis)
  }
}

export const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10

export const writeResults = (name: string, markdown: string, json: unknown) => {
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, `${name}.md`), markdown)
  writeFileSync(join(resultsDir, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`)
}

/**
 * The PostgreSQL a benchmark runs against: DATABASE_URL when the server would take it as one (`isPostgresUrl`), else
 * none (SQLite only).
 */
export const pgUrl = (): string | undefined => {
  const url = process.env.DATABASE_URL
  return url !== undefined && isPostgresUrl(url) ? url.trim() : undefined
}

/** Said in a benchmark's results, and printed, when its PostgreSQL run was left out for want of a database. */
export const pgNotRun =
  "PostgreSQL was not run: DATABASE_URL is not a postgres:// URL (e.g. `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench`)."

/** Runs one statement at DATABASE_URL through the store's own driver. */
const pgStatement = async (statement: string) => {
  const [{ PgClient }, { Effect, Redacted }] = await Promise.all([import("@effect/sql-pg"), import("effect")])
  await Effect.runPromise(Effect.scoped(Effect.provide(
    Effect.gen(function*() {
      yield* (yield* PgClient.PgClient).unsafe(statement)
    }),
    PgClient.layer({ url: Redacted.make(pgUrl()!), maxConnections: 1 })
  )))
}

/** Creates a benchmark's PostgreSQL schema (at DATABASE_URL) when missing. */
export const createPgSchema = (schema: string) => pgStatement(`CREATE SCHEMA IF NOT EXISTS ${schema}`)

/** Drops a benchmark's PostgreSQL schema (at DATABASE_URL) with everything in it. */
export const dropPgSchema = (schema: string) => pgStatement(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
