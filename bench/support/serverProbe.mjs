/**
 * Preloaded into the benchmarked server process (`node --import ./bench/support/serverProbe.mjs`): an event-loop
 * delay histogram (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution) and the peaks of the memory kinds behind RSS
 * (V8 heap, external and array buffers), sampled every 50 ms, and its GC pauses (count, total and longest, young
 * generation and full collections apart). With HOOKRELAY_PROBE_ALLOCATIONS=file, also where each phase allocated; with
 * HOOKRELAY_PROBE_CPU=prefix, a CPU profile of the main thread per phase (`prefix-<n>.cpuprofile`, n from 0, for Chrome's
 * DevTools or a script). On SIGUSR2 it writes what it saw since the last
 * SIGUSR2 as one JSON line to `HOOKRELAY_PROBE_FILE`, then starts over, so the benchmark can measure one phase at a
 * time. Benchmark-only: nothing in `src/` knows about it. Plain JavaScript, so that the server runs on plain `node` as
 * `npm start` runs it, without tsx's loader (and its RSS) in the measured process.
 */
/* global process, setInterval */
import { appendFileSync, writeFileSync } from "node:fs"
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"

const file = process.env.HOOKRELAY_PROBE_FILE
if (file !== undefined && file !== "") {
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  const zero = () => ({ rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 })
  let peak = zero()
  const sampler = setInterval(() => {
    const usage = process.memoryUsage()
    peak = {
      rss: Math.max(peak.rss, usage.rss),
      heapUsed: Math.max(peak.heapUsed, usage.heapUsed),
      heapTotal: Math.max(peak.heapTotal, usage.heapTotal),
      external: Math.max(peak.external, usage.external),
      arrayBuffers: Math.max(peak.arrayBuffers, usage.arrayBuffers)
    }
  }, 50)
  sampler.unref()
  const ms = (nanos) => Math.round(nanos / 1e4) / 100
  // GC pauses of the phase: young-generation scavenges and full (mark-compact) collections, count, total and longest.
  const zeroGc = () => ({ minorCount: 0, minorMs: 0, minorMaxMs: 0, majorCount: 0, majorMs: 0, majorMaxMs: 0 })
  let gc = zeroGc()
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const minor = entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR
      if (minor) {
        gc.minorCount++
        gc.minorMs += entry.duration
        gc.minorMaxMs = Math.max(gc.minorMaxMs, entry.duration)
      } else {
        gc.majorCount++
        gc.majorMs += entry.duration
        gc.majorMaxMs = Math.max(gc.majorMaxMs, entry.duration)
      }
    }
  }).observe({ entryTypes: ["gc"] })
  const round = (value) => Math.round(value * 100) / 100
  // HOOKRELAY_PROBE_ALLOCATIONS=file: a sampling allocation profile (objects collected by GC included) of each
  // phase, written as one JSON line of the top allocating functions (bytes) at each SIGUSR2.
  const allocationFile = process.env.HOOKRELAY_PROBE_ALLOCATIONS
  // HOOKRELAY_PROBE_SURVIVORS=1: only what outlived a young-generation collection (what makes scavenges long).
  const includeObjectsCollectedByMinorGC = process.env.HOOKRELAY_PROBE_SURVIVORS !== "1"
  let session
  if (allocationFile !== undefined && allocationFile !== "") {
    const { Session } = await import("node:inspector")
    session = new Session()
    session.connect()
    session.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC
    })
  }
  const writeAllocations = () =>
    session.post("HeapProfiler.stopSampling", (error, result) => {
      if (error === null) {
        const self = new Map()
        const walk = (node) => {
          const frame = node.callFrame
          const key = `${frame.functionName || "(anonymous)"} ${
            frame.url.split("/").slice(-3).join("/")
          }:${frame.lineNumber}`
          self.set(key, (self.get(key) ?? 0) + node.selfSize)
          for (const child of node.children) walk(child)
        }
        walk(result.profile.head)
        const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 60)
        appendFileSync(allocationFile, `${JSON.stringify(top)}\n`)
      }
      session.post("HeapProfiler.startSampling", {
        samplingInterval: 4096,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC
      })
    })

  // HOOKRELAY_PROBE_CPU=prefix: the main thread's CPU profile of each phase, one file per phase.
  const cpuPrefix = process.env.HOOKRELAY_PROBE_CPU
  let cpuSession
  let cpuPhase = 0
  if (cpuPrefix !== undefined && cpuPrefix !== "") {
    const { Session } = await import("node:inspector")
    cpuSession = new Session()
    cpuSession.connect()
    cpuSession.post("Profiler.enable")
    cpuSession.post("Profiler.setSamplingInterval", { interval: 250 })
    cpuSession.post("Profiler.start")
  }
  const writeCpuProfile = () =>
    cpuSession.post("Profiler.stop", (error, result) => {
      if (error === null) writeFileSync(`${cpuPrefix}-${cpuPhase}.cpuprofile`, JSON.stringify(result.profile))
      cpuPhase++
      cpuSession.post("Profiler.start")
    })

  process.on("SIGUSR2", () => {
    if (session !== undefined) writeAllocations()
    if (cpuSession !== undefined) writeCpuProfile()
    appendFileSync(
      file,
      `${
        JSON.stringify({
          loopDelayMs: {
            p50: ms(delay.percentile(50)),
            p99: ms(delay.percentile(99)),
            p999: ms(delay.percentile(99.9)),
            max: ms(delay.max)
          },
          peakMemory: peak,
          gc: Object.fromEntries(Object.entries(gc).map(([key, value]) => [key, round(value)]))
        })
      }\n`
    )
    delay.reset()
    peak = zero()
    gc = zeroGc()
  })
}
