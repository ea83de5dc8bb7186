/**
 * A dispatcher and nothing else — store, transport, doorbell, outcomes, `Dispatcher.start` — in a process of its own,
 * for the multi-process and memory tests. No HTTP ingest: the parent fills the outbox through the Store API.
 *
 * Run it with `startDispatcherProcess` (a `fork` with IPC), or by hand:
 *   DISPATCHER_STORE=sqlite DISPATCHER_SQLITE_FILE=/tmp/x.db node --import tsx test/support/dispatcherProcess.ts
 *
 * Configuration (environment):
 *   DISPATCHER_STORE          "pg" (DATABASE_URL, DISPATCHER_PG_SCHEMA) or "sqlite" (DISPATCHER_SQLITE_FILE)
 *   DISPATCHER_OWNER          lease owner id (default: a random UUID, the dispatcher's own default)
 *   DISPATCHER_LEASE_MS       lease duration (default: the dispatcher's, 10 s)
 *   DISPATCHER_MAILBOX, DISPATCHER_MAX_JOBS, DISPATCHER_CLAIM_BATCH, DISPATCHER_IDLE_POLL_MS   DispatcherOptions
 *   DISPATCHER_SAMPLE_MS      how often heapUsed and RSS are sampled (default 20 ms)
 *   DISPATCHER_GC_EVERY_MS    also force a full GC this often and sample the heap right after it: the live set,
 *                             which is what a memory bound is about (heapUsed between collections includes garbage
 *                             V8 has not collected yet). Off by default.
 *
 * Reports (IPC to the parent; one JSON line on stdout each when there is no IPC channel):
 *   { type: "ready", owner, pid, baseline }   the store is open and the dispatcher runs
 *   { type: "stats", ... }                    in answer to { type: "stats", gc? } (gc: collect first, if exposed)
 *   { type: "stopped", ... }                  after { type: "stop" } or SIGTERM: the layers were closed (leases
 *                                             released, last completions written); then the process exits 0
 * `delivered` / `dead` count the outcomes this process published (every job it finished, whether or not another
 * process had taken the job over meanwhile).
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { fork } from "node:child_process"
import { randomUUID } from "node:crypto"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Dispatcher from "../../src/delivery/Dispatcher.js"
import { DeliveryOutcomes } from "../../src/delivery/Outcomes.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import * as Transport from "../../src/delivery/Transport.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import * as StoreLayers from "../../src/store/Store.js"

export interface MemoryFigures {
  readonly heapUsed: number
  readonly rss: number
}

export interface DispatcherStats {
  readonly owner: string
  readonly pid: number
  readonly delivered: number
  readonly dead: number
  /** Peaks since the dispatcher started (sampled every DISPATCHER_SAMPLE_MS). */
  readonly peakHeapUsed: number
  readonly peakRss: number
  /** The most jobs the dispatcher held in memory at once (sampled with the memory). */
  readonly peakHeld: number
  /** Largest heapUsed right after a forced full GC (DISPATCHER_GC_EVERY_MS); 0 when off. */
  readonly peakLiveHeap: number
  readonly liveSamples: number
  /** How late the sampling timer fired at worst: how long the event loop was kept busy in one go. */
  readonly maxTimerLagMs: number
  readonly now: MemoryFigures
  /** Before the dispatcher started, store open, after a GC when exposed. */
  readonly baseline: MemoryFigures
  readonly samples: number
}

export type DispatcherReport =
  | { readonly type: "ready"; readonly owner: string; readonly pid: number; readonly baseline: MemoryFigures }
  | ({ readonly type: "stats" } & DispatcherStats)
  | ({ readonly type: "stopped" } & DispatcherStats)

export type DispatcherCommand = { readonly type: "stats"; readonly gc?: boolean } | { readonly type: "stop" }

const scriptPath = fileURLToPath(import.meta.url)

// --- the parent's side -------------------------------------------------------------------------

export interface DispatcherProcess {
  readonly owner: string
  readonly pid: number
  readonly stats: (options?: { readonly gc?: boolean }) => Promise<DispatcherStats>
  /** Graceful stop; resolves with the final figures once the process exited. */
  readonly stop: () => Promise<DispatcherStats>
  readonly kill: (signal: NodeJS.Signals) => Promise<number | string>
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>
  readonly output: () => string
}

/** Forks this script with `env` and waits for its "ready" report (at most 30 s). */
export const startDispatcherProcess = (
  env: Record<string, string>,
  /** This script compiled to JavaScript (a benchmark runs it on plain node, as production does); default: tsx. */
  compiledScript?: string
): Promise<DispatcherProcess> =>
  new Promise((resolve, reject) => {
    const child = fork(compiledScript ?? scriptPath, [], {
      execArgv: compiledScript === undefined ? ["--import", "tsx", "--expose-gc"] : ["--expose-gc"],
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    })
    let output = ""
    const keep = (chunk: Buffer) => {
      // The tail is enough to explain a failure; a chatty child must not grow the test's heap.
      output = (output + chunk.toString("utf8")).slice(-64 * 1024)
    }
    child.stdout!.on("data", keep)
    child.stderr!.on("data", keep)
    // "close", not "exit": it comes after the IPC channel closed, so every report the child sent has arrived.
    const exited = new Promise<number | string>((done) =>
      child.once("close", (code, signal) => done(code ?? signal ?? "unknown"))
    )
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`the dispatcher process did not start within 30 s:\n${output}`))
    }, 30_000)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`the dispatcher process exited (${code}) before it was ready:\n${output}`))
    })

    const next = <T extends DispatcherReport["type"]>(type: T) =>
      new Promise<Extract<DispatcherReport, { type: T }>>((done, fail) => {
        const onMessage = (message: DispatcherReport) => {
          if (message.type !== type) return
          child.off("message", onMessage)
          done(message as Extract<DispatcherReport, { type: T }>)
        }
        child.on("message", onMessage)
        void exited.then((code) => {
          child.off("message", onMessage)
          fail(new Error(`the dispatcher process exited (${code}) while we waited for "${type}":\n${output}`))
        })
      })

    void next("ready").then((ready) => {
      clearTimeout(timer)
      const send = (command: DispatcherCommand) => child.send(command)
      resolve({
        owner: ready.owner,
        pid: ready.pid,
        stats: (options = {}) => {
          const reply = next("stats")
          send({ type: "stats", gc: options.gc ?? false })
          return reply
        },
        stop: async () => {
          const stopped = next("stopped")
          send({ type: "stop" })
          const figures = await stopped
          await exited
          return figures
        },
        kill: (signal) => {
          child.kill(signal)
          return exited
        },
        exited,
        output: () => output
      })
    }, () => undefined)
  })

// --- the child's side --------------------------------------------------------------------------

const optionalNumber = (name: string): number | undefined => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`)
  return value
}

const storeLayer = () => {
  const kind = process.env.DISPATCHER_STORE
  if (kind === "pg") {
    const url = process.env.DATABASE_URL
    if (url === undefined || url === "") throw new Error("DISPATCHER_STORE=pg needs DATABASE_URL")
    return StoreLayers.layerPg({ url, schema: process.env.DISPATCHER_PG_SCHEMA || undefined })
  }
  if (kind === "sqlite") {
    const filename = process.env.DISPATCHER_SQLITE_FILE
    if (filename === undefined || filename === "") {
      throw new Error("DISPATCHER_STORE=sqlite needs DISPATCHER_SQLITE_FILE")
    }
    return StoreLayers.layerSqlite({ filename })
  }
  throw new Error(`DISPATCHER_STORE must be "pg" or "sqlite", got ${kind}`)
}

/** Resolves once the report left the process, so that an `exit` right after does not lose it. */
const report = (message: DispatcherReport): Promise<void> =>
  new Promise((done) => {
    if (process.send === undefined) process.stdout.write(`${JSON.stringify(message)}\n`, () => done())
    else if (process.connected) process.send(message, undefined, {}, () => done())
    else done() // the parent left: nobody to tell
  })

const memory = (): MemoryFigures => {
  const usage = process.memoryUsage()
  return { heapUsed: usage.heapUsed, rss: usage.rss }
}

const collectGarbage = () => (globalThis as { gc?: () => void }).gc?.()

const main = async () => {
  const owner = process.env.DISPATCHER_OWNER || randomUUID()
  const leaseMillis = optionalNumber("DISPATCHER_LEASE_MS")
  const idlePollMillis = optionalNumber("DISPATCHER_IDLE_POLL_MS")
  const options: Dispatcher.DispatcherOptions = {
    owner,
    lease: leaseMillis === undefined ? undefined : `${leaseMillis} millis`,
    idlePoll: idlePollMillis === undefined ? undefined : `${idlePollMillis} millis`,
    mailboxPerSource: optionalNumber("DISPATCHER_MAILBOX"),
    maxJobsInMemory: optionalNumber("DISPATCHER_MAX_JOBS"),
    claimBatch: optionalNumber("DISPATCHER_CLAIM_BATCH")
  }
  const sampleMillis = optionalNumber("DISPATCHER_SAMPLE_MS") ?? 20
  const gcEveryMillis = optionalNumber("DISPATCHER_GC_EVERY_MS")

  let delivered = 0
  let dead = 0
  // Counting at publish rather than through a subscription: nothing is missed before a subscriber would be running.
  const countingOutcomes = Layer.effect(
    DeliveryOutcomes,
    Effect.map(Outcomes.make(), (inner) =>
      DeliveryOutcomes.of({
        publish: (outcome) =>
          Effect.andThen(
            Effect.sync(() => {
              if (outcome.status === "delivered") delivered++
              else dead++
            }),
            inner.publish(outcome)
          ),
        publishAll: (outcomes) =>
          Effect.andThen(
            Effect.sync(() => {
              for (const outcome of outcomes) {
                if (outcome.status === "delivered") delivered++
                else dead++
              }
            }),
            inner.publishAll(outcomes)
          ),
        stream: inner.stream
      }))
  )
  const base = Layer.mergeAll(Transport.layer(), OutboxSignal.layer, countingOutcomes).pipe(
    Layer.provideMerge(storeLayer())
  )
  const baseRuntime = ManagedRuntime.make(base)
  const context = await baseRuntime.context()

  collectGarbage()
  const baseline = memory()
  let peakHeapUsed = baseline.heapUsed
  let peakRss = baseline.rss
  let samples = 0
  let heldNow = () => 0
  let peakHeld = 0
  let maxTimerLagMs = 0
  let lastSample = performance.now()
  const sampler = setInterval(() => {
    const at = performance.now()
    maxTimerLagMs = Math.max(maxTimerLagMs, at - lastSample - sampleMillis)
    lastSample = at
    const now = memory()
    samples++
    peakHeld = Math.max(peakHeld, heldNow())
    if (now.heapUsed > peakHeapUsed) peakHeapUsed = now.heapUsed
    if (now.rss > peakRss) peakRss = now.rss
  }, sampleMillis)
  let peakLiveHeap = 0
  let liveSamples = 0
  const liveSampler = gcEveryMillis === undefined ? undefined : setInterval(() => {
    // Sample first: the garbage just before a collection is the natural peak.
    const before = memory()
    peakHeapUsed = Math.max(peakHeapUsed, before.heapUsed)
    peakRss = Math.max(peakRss, before.rss)
    collectGarbage()
    liveSamples++
    peakLiveHeap = Math.max(peakLiveHeap, process.memoryUsage().heapUsed)
  }, gcEveryMillis)

  const dispatcherRuntime = ManagedRuntime.make(
    Layer.effectDiscard(Effect.map(Dispatcher.start(options), (dispatcher) => {
      heldNow = () => dispatcher.held.size
    })).pipe(Layer.provide(Layer.succeedContext(context)))
  )
  await dispatcherRuntime.context()

  const stats = (): DispatcherStats => {
    const now = memory()
    peakHeapUsed = Math.max(peakHeapUsed, now.heapUsed)
    peakRss = Math.max(peakRss, now.rss)
    return {
      owner,
      pid: process.pid,
      delivered,
      dead,
      peakHeapUsed,
      peakRss,
      peakHeld,
      peakLiveHeap,
      liveSamples,
      maxTimerLagMs,
      now,
      baseline,
      samples
    }
  }

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await dispatcherRuntime.dispose()
    await baseRuntime.dispose()
    clearInterval(sampler)
    if (liveSampler !== undefined) clearInterval(liveSampler)
    await report({ type: "stopped", ...stats() })
    process.exit(0)
  }

  process.on("message", (command: DispatcherCommand) => {
    if (command.type === "stats") {
      if (command.gc === true) collectGarbage()
      void report({ type: "stats", ...stats() })
    } else if (command.type === "stop") {
      void stop()
    }
  })
  process.on("SIGTERM", () => void stop())
  // The parent is gone: nobody reads the figures, and a stray dispatcher must not keep delivering.
  process.on("disconnect", () => void stop())
  await report({ type: "ready", owner, pid: process.pid, baseline })
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === scriptPath) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}
