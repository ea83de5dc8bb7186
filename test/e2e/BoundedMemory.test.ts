import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { deliveredBody, encodeBody } from "../../src/domain/DeliveredBody.js"
import { stampMessage } from "../../src/domain/Stamp.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import { type DispatcherProcess, startDispatcherProcess } from "../support/dispatcherProcess.js"
import { freePort } from "../support/serverProcess.js"

/**
 * The dispatcher's memory does not grow with the backlog on disk (docs/ARCHITECTURE.md: the jobs held in memory are
 * bounded however large the backlog on disk grows). A large outbox whose receiver refuses every connection keeps every claimed job in memory
 * for its whole in-memory retry phase, the worst case for what the dispatcher holds. It runs in a process of its own,
 * so that its heap is measured alone.
 */

const pendingJobs = 200_000
/** Several sources, each its own URL (so its own gate of 16): together their mailboxes fill the global bound. */
const sources = 8
const chunk = 500
const runMillis = 12_000
/** The dispatcher's default `maxJobsInMemory`: what it may hold whatever the backlog on disk. */
const maxJobsInMemory = 2048
/**
 * Generous, on the live heap: measured after a forced full GC (every second in the child), because that is what grows
 * if the dispatcher kept anything per job of the backlog. heapUsed between collections is mostly garbage that V8
 * collects when it likes (it is printed, not asserted: it depends on V8's heuristics more than on our code).
 */
const liveHeapBound = 150 * 1024 * 1024

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

const bodyFor = (messageId: string, now: number) =>
  encodeBody(deliveredBody(stampMessage(
    {
      type: "track",
      userId: `user-${messageId}`,
      event: "Order Completed",
      properties: { orderId: messageId, revenue: 12.5, currency: "EUR" },
      context: { ip: "203.0.113.7" },
      messageId
    },
    { receivedAt: now, generatedMessageId: messageId }
  )))

describe("bounded memory (real process)", () => {
  const cleanup: Array<() => Promise<unknown> | void> = []
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step()
  })

  it(
    `${pendingJobs} pending jobs, the receiver refusing connections: the dispatcher's heap stays bounded`,
    async () => {
      const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-memory-"))
      cleanup.push(() => rmSync(directory, { recursive: true, force: true }))
      const filename = Path.join(directory, "hookrelay.db")
      // Nobody listens there: every attempt is refused, which is retryable, so no job ever leaves the outbox.
      const downPort = await freePort()

      // Filled from this process, through the Store API, before the dispatcher's process opens the file.
      const filling = ManagedRuntime.make(StoreLayers.layerSqlite({ filename }))
      const fillStarted = performance.now()
      await filling.runPromise(Effect.gen(function*() {
        const sourceStore = yield* Sources
        const outbox = yield* Outbox
        const now = Date.now()
        for (let s = 0; s < sources; s++) {
          yield* sourceStore.upsertSource({
            id: `down-${s}`,
            writeKey: `key-down-${s}`,
            webhooks: { enabled: true, endpoints: [{ url: `http://127.0.0.1:${downPort}/down-${s}` }] }
          }, now)
        }
        for (let start = 0; start < pendingJobs; start += chunk) {
          const entries = Array.from({ length: Math.min(chunk, pendingJobs - start) }, (_, k) => {
            const messageId = `memory-${start + k}`
            return { messageId, body: bodyFor(messageId, now) }
          })
          yield* outbox.enqueue(`down-${(start / chunk) % sources}`, entries, now, { countApiCall: false })
        }
      }))
      await filling.dispose()
      const fillSeconds = ((performance.now() - fillStarted) / 1000).toFixed(1)

      const dispatcher: DispatcherProcess = await startDispatcherProcess({
        DISPATCHER_STORE: "sqlite",
        DISPATCHER_SQLITE_FILE: filename,
        DISPATCHER_GC_EVERY_MS: "1000"
      })
      cleanup.push(() => dispatcher.kill("SIGKILL"))
      await sleep(runMillis / 2)
      // Half-way, from outside (WAL lets this process read while the child writes): the claimed jobs are the bound.
      const reading = ManagedRuntime.make(StoreLayers.layerSqlite({ filename }))
      const midway = await reading.runPromise(Effect.flatMap(Outbox, (outbox) => outbox.backlog()))
      await reading.dispose()
      await sleep(runMillis / 2)
      const stopped = await dispatcher.stop()

      const checking = ManagedRuntime.make(StoreLayers.layerSqlite({ filename }))
      const { attempts, backlog } = await checking.runPromise(Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        const backlog = yield* outbox.backlog()
        const [job] = yield* messageLog.jobsForMessage("memory-0")
        return { backlog, attempts: job?.attemptCount ?? 0 }
      }))
      await checking.dispose()

      console.log(
        [
          `bounded memory: ${pendingJobs} pending jobs on SQLite (filled in ${fillSeconds} s), ${sources} sources,`,
          `receiver refusing connections, dispatcher run ${runMillis / 1000} s:`,
          `baseline (store open, after GC) heap ${mb(stopped.baseline.heapUsed)} / RSS ${mb(stopped.baseline.rss)};`,
          `peak live heap (after a full GC, ${stopped.liveSamples} samples) ${mb(stopped.peakLiveHeap)};`,
          `peak heapUsed ${mb(stopped.peakHeapUsed)} / RSS ${mb(stopped.peakRss)} (${stopped.samples} samples);`,
          `worst timer lag ${Math.round(stopped.maxTimerLagMs)} ms;`,
          `jobs leased half-way ${midway.delivering}, most held in memory at once ${stopped.peakHeld};`,
          `attempts on job memory-0 ${attempts};`,
          `backlog after a graceful stop ${JSON.stringify(backlog)}`
        ].join(" ")
      )
      expect(stopped.liveSamples).toBeGreaterThan(0)
      expect(stopped.peakLiveHeap).toBeLessThan(liveHeapBound)
      // It was working, on no more jobs than its bound, while the rest of the backlog stayed on disk. The bound is on
      // the jobs in memory, sampled all along; the store's count of leased jobs can pass it for a moment (a job goes
      // back to the store by a completion written flushDelay after it left memory, and a claim may come first).
      expect(midway.delivering).toBeGreaterThan(0)
      expect(stopped.peakHeld).toBeGreaterThan(0)
      expect(stopped.peakHeld).toBeLessThanOrEqual(maxJobsInMemory)
      expect(attempts).toBeGreaterThan(0)
      // Nothing delivered, nothing dead, nothing left leased: the stop handed every claimed job back.
      expect(backlog).toMatchObject({ pending: pendingJobs, delivering: 0, delivered: 0, dead: 0 })
      expect(stopped.delivered + stopped.dead).toBe(0)
    },
    90_000
  )
})
