/**
 * The hand-made runtime parts against Effect 4's own, each the way its callers use it, in alternating rounds (median):
 *
 * - permits: `FifoGate` (the endpoint limit, the SQLite lock, admission's commit slots since `TimedPermits` went),
 *   the old `TimedPermits` (kept here, as it was, for the comparison) and Effect's `Semaphore`: a free permit taken
 *   and given back; fibers queued behind 16 permits; a bounded wait (admission); and the order a holder that gives
 *   its permit back and takes it again at once is served in (the SQLite lock's retention stall).
 * - deadlines: a request answered on the next turn of the event loop, with no deadline, with `Effect.timeoutOption`,
 *   and registered with the shared ticker (`runtime/Deadlines`).
 * - tables: `Slots` / `KeyedSlots` against `Map` and `MutableHashMap` under churn (256 live entries of ~1 KB, 400 000
 *   added and removed): ns per add+remove, and bytes promoted to the old generation (summed from `--trace-gc-nvp` of a
 *   child process per variant).
 *
 * Writes bench/results/runtime-parts.{md,json}. Run from source it compiles itself and runs on plain node.
 *
 *   npx tsx bench/runtimeParts.ts [rounds]
 */
import { Clock, Deferred, Duration, Effect, Exit, Fiber, MutableHashMap, Semaphore } from "effect"
import { spawnSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Deadlines from "../src/runtime/Deadlines.js"
import { FifoGate } from "../src/runtime/FifoGate.js"
import { KeyedSlots, Slots } from "../src/runtime/Slots.js"
import { allocatedBytes } from "./support/allocations.js"
import { repoRoot, runCompiled } from "./support/compile.js"

const rounds = Number(process.argv[2] ?? 7)
const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const round1 = (value: number) => Math.round(value * 10) / 10

// ---- the old TimedPermits (src/overload/TimedPermits.ts before this change), for the comparison ----

const makeTimedPermits = (permits: number) => {
  let free = permits
  const waiters = new Set<Deferred.Deferred<void>>()
  const releaseNow = (): void => {
    const next = waiters.values().next()
    if (next.done === true) {
      free += 1
      return
    }
    waiters.delete(next.value)
    Deferred.doneUnsafe(next.value, Exit.void)
  }
  const release = Effect.sync(releaseNow)
  const tryAcquire = (): boolean => {
    if (free === 0 || waiters.size > 0) return false
    free -= 1
    return true
  }
  const grantedTrue = Effect.succeed(true)
  const acquire = (wait: Duration.Input): Effect.Effect<boolean> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        if (tryAcquire()) return grantedTrue
        const handed = Deferred.makeUnsafe<void>()
        waiters.add(handed)
        return Effect.gen(function*() {
          const waited = yield* Effect.exit(Effect.interruptible(Effect.timeoutOption(Deferred.await(handed), wait)))
          const owned = yield* Effect.sync(() => !waiters.delete(handed))
          if (Exit.isFailure(waited)) {
            if (owned) yield* release
            return yield* restore(Exit.failCause(waited.cause))
          }
          return owned
        })
      })
    )
  return { acquire, release, tryAcquire, releaseNow }
}

// ---- one permit held around an effect, the way each caller holds it ----

type Hold = <A>(effect: Effect.Effect<A>) => Effect.Effect<A>

/** The attempt's and admission's way: a free permit taken synchronously, given back in both arms of one match. */
const holdSync = (tryTake: () => boolean, take: Effect.Effect<unknown>, giveBack: () => void): Hold => (effect) =>
  Effect.uninterruptibleMask((restore) => {
    const run = () =>
      Effect.matchCauseEffect(restore(effect), {
        onFailure: (cause) => {
          giveBack()
          return Effect.failCause(cause)
        },
        onSuccess: (value) => {
          giveBack()
          return Effect.succeed(value)
        }
      })
    return tryTake() ? run() : Effect.flatMap(restore(take), run)
  })

const wait = Duration.hours(1)

interface Permits {
  readonly name: string
  readonly make: (permits: number) => { readonly hold: Hold; readonly holdWithin: Hold }
}

const permitVariants: ReadonlyArray<Permits> = [
  {
    name: "none (no limit: the loop and its fibers alone)",
    make: () => ({ hold: (effect) => effect, holdWithin: (effect) => effect })
  },
  {
    name: "FifoGate",
    make: (permits) => {
      const gate = new FifoGate(permits)
      return {
        hold: holdSync(() => gate.tryTake(), gate.take, () => gate.giveBack()),
        holdWithin: holdSync(() => gate.tryTake(), gate.takeWithin(wait), () => gate.giveBack())
      }
    }
  },
  {
    name: "TimedPermits (old)",
    make: (permits) => {
      const timed = makeTimedPermits(permits)
      const hold = holdSync(timed.tryAcquire, timed.acquire(wait), timed.releaseNow)
      return { hold, holdWithin: hold }
    }
  },
  {
    name: "Effect Semaphore",
    make: (permits) => {
      const semaphore = Semaphore.makeUnsafe(permits)
      return {
        hold: (effect) => semaphore.withPermit(effect),
        // Bounded the only way it offers: `Effect.timeoutOption` around the take (a permit taken as the timeout
        // interrupts it would be lost: shown for its cost, not as a candidate).
        holdWithin: (effect) =>
          Effect.uninterruptibleMask((restore) =>
            Effect.flatMap(
              restore(Effect.timeoutOption(semaphore.take(1), wait)),
              () => Effect.ensuring(restore(effect), semaphore.release(1))
            )
          )
      }
    }
  }
]

interface Measured {
  readonly nsPerOp: number
  readonly bytesPerOp: number
}

const timeRun = async (ops: number, program: () => Effect.Effect<unknown>): Promise<Measured> => {
  globalThis.gc?.()
  const start = process.hrtime.bigint()
  await Effect.runPromise(program())
  const ns = Number(process.hrtime.bigint() - start) / ops
  const bytes = (await allocatedBytes(() => Effect.runPromise(program()).then(() => undefined))) / ops
  return { nsPerOp: ns, bytesPerOp: bytes }
}

const loop = (times: number, effect: Effect.Effect<unknown>): Effect.Effect<void> =>
  Effect.suspend(() => {
    let left = times
    const step: Effect.Effect<void> = Effect.suspend(() =>
      left-- > 0 ? Effect.flatMap(effect, () => step) : Effect.void
    )
    return step
  })

const freeOps = 200_000
const permitCases: ReadonlyArray<{
  readonly name: string
  readonly ops: number
  readonly run: (variant: Permits) => Effect.Effect<unknown>
}> = [
  {
    name: "a free permit taken and given back",
    ops: freeOps,
    run: (variant) => Effect.suspend(() => loop(freeOps, variant.make(1).hold(Effect.void)))
  },
  ...[1_000, 10_000].map((fibers) => ({
    name: `${fibers.toLocaleString("en")} fibers queued behind 16 permits`,
    ops: fibers,
    run: (variant: Permits) =>
      Effect.suspend(() => {
        const { hold } = variant.make(16)
        return Effect.forEach(Array.from({ length: fibers }), () => hold(Effect.yieldNow), {
          concurrency: "unbounded",
          discard: true
        })
      })
  })),
  {
    name: "bounded wait: 1,000 fibers behind 16 permits",
    ops: 1_000,
    run: (variant) =>
      Effect.suspend(() => {
        const { holdWithin } = variant.make(16)
        return Effect.forEach(Array.from({ length: 1_000 }), () => holdWithin(Effect.yieldNow), {
          concurrency: "unbounded",
          discard: true
        })
      })
  }
]

/** A holder that gives its one permit back and takes it again at once, 100 times, while another fiber waits. */
const holderTurnsBeforeWaiter = (variant: Permits): Promise<number> =>
  Effect.runPromise(Effect.gen(function*() {
    const { hold } = variant.make(1)
    let turns = 0
    let waiterServed = -1
    // The holder holds while the waiter queues, then gives back and takes again in a loop.
    const waiter = yield* hold(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(hold(Effect.sync(() => waiterServed = turns)))
      yield* Effect.yieldNow
      yield* Effect.yieldNow
      return fiber
    }))
    for (let i = 0; i < 100; i++) yield* hold(Effect.sync(() => turns++))
    yield* Fiber.join(waiter)
    return waiterServed
  }))

// ---- deadlines ----

const requests = 20_000
const inFlight = 256
const timeout = Duration.seconds(5)
const answeredNextTurn = Effect.callback<number>((resume) => {
  setImmediate(() => resume(Effect.succeed(200)))
})

const deadlineVariants: ReadonlyArray<{ readonly name: string; readonly run: () => Effect.Effect<unknown> }> = [
  {
    name: "no deadline",
    run: () => Effect.forEach(Array.from({ length: requests }), () => answeredNextTurn, { concurrency: inFlight })
  },
  {
    name: "Effect.timeoutOption",
    run: () =>
      Effect.forEach(Array.from({ length: requests }), () => Effect.timeoutOption(answeredNextTurn, timeout), {
        concurrency: inFlight
      })
  },
  {
    name: "shared ticker (runtime/Deadlines)",
    run: (): Effect.Effect<unknown> =>
      Effect.scoped(Effect.gen(function*() {
        const deadlines = yield* Deadlines.make({ resolution: "25 millis" })
        const clock = yield* Clock.Clock
        const timeoutMillis = Duration.toMillis(timeout)
        const request = Effect.callback<number>((resume) => {
          const entry = {
            deadline: clock.currentTimeMillisUnsafe() + timeoutMillis,
            expire: () => resume(Effect.succeed(504))
          }
          const slot = deadlines.add(entry)
          setImmediate(() => {
            deadlines.remove(slot, entry)
            resume(Effect.succeed(200))
          })
        })
        yield* Effect.forEach(Array.from({ length: requests }), () => request, { concurrency: inFlight })
      }))
  }
]

// ---- tables under churn ----

const live = 256
const churnOps = 400_000
const payload = () => ({ numbers: new Array(100).fill(0), text: `x${Math.random()}` })

const churn: Record<string, () => number> = {
  Slots: () => {
    const slots = new Slots<object>()
    const ids: Array<number> = new Array(live)
    for (let i = 0; i < churnOps; i++) {
      if (i >= live) slots.take(ids[i % live]!)
      ids[i % live] = slots.add(payload())
    }
    return slots.size
  },
  "Map (number keys)": () => {
    const map = new Map<number, object>()
    for (let i = 0; i < churnOps; i++) {
      if (i >= live) map.delete(i - live)
      map.set(i, payload())
    }
    return map.size
  },
  "MutableHashMap (number keys)": () => {
    const map = MutableHashMap.empty<number, object>()
    for (let i = 0; i < churnOps; i++) {
      if (i >= live) MutableHashMap.remove(map, i - live)
      MutableHashMap.set(map, i, payload())
    }
    return MutableHashMap.size(map)
  },
  "KeyedSlots (string keys)": () => {
    const table = new KeyedSlots<string, object>()
    for (let i = 0; i < churnOps; i++) {
      if (i >= live) table.delete(`job-${i - live}`)
      table.set(`job-${i}`, payload())
    }
    return table.size
  },
  "Map (string keys)": () => {
    const map = new Map<string, object>()
    for (let i = 0; i < churnOps; i++) {
      if (i >= live) map.delete(`job-${i - live}`)
      map.set(`job-${i}`, payload())
    }
    return map.size
  }
}

/** A child process runs one variant's churn with `--trace-gc-nvp`: bytes promoted over its scavenges, and its time. */
const churnInChild = (variant: string): { readonly promotedMb: number; readonly nsPerOp: number } => {
  const result = spawnSync(process.execPath, ["--trace-gc-nvp", fileURLToPath(import.meta.url), "--churn", variant], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    env: process.env
  })
  let promoted = 0
  for (const match of result.stdout.matchAll(/\bpromoted=(\d+)/g)) promoted += Number(match[1])
  const ns = /churn-ns=([\d.]+)/.exec(result.stdout)
  return { promotedMb: round1(promoted / 1024 / 1024), nsPerOp: round1(Number(ns?.[1] ?? NaN)) }
}

// ---- main ----

/** What the figures decided (docs/ARCHITECTURE.md, src/runtime). */
const conclusions = [
  "## Kept",
  "",
  "- `FifoGate`, the one FIFO semaphore (`TimedPermits` deleted, its bounded wait is `FifoGate.takeWithin`). A free " +
  "permit costs the same in all three, and Effect 4's `Semaphore` is first in, first out now; but behind a slow " +
  "endpoint (thousands of jobs queued) each of its releases walks a copy of every waiter in a scheduled task, and its " +
  "only bounded wait (`Effect.timeout` around `take`) can lose a permit taken as the timeout interrupts it.",
  "- `runtime/Deadlines`, the one deadline ticker of the delivery transport and the client: `Effect.timeoutOption` " +
  "costs a race of two fibers and a timer per request.",
  "- `Slots`: a `Map` (and `MutableHashMap`, a `Map` inside) under churn promotes nearly every entry it held."
]

const main = async () => {
  const permitRows: Array<{ case: string; variant: string; nsPerOp: Array<number>; bytesPerOp: Array<number> }> = []
  for (const c of permitCases) {
    for (const v of permitVariants) permitRows.push({ case: c.name, variant: v.name, nsPerOp: [], bytesPerOp: [] })
  }
  const deadlineRows = deadlineVariants.map((v) => ({
    variant: v.name,
    nsPerOp: [] as Array<number>,
    bytesPerOp: [] as Array<number>
  }))
  const churnRows = Object.keys(churn).map((name) => ({
    variant: name,
    nsPerOp: [] as Array<number>,
    promotedMb: [] as Array<number>
  }))

  for (let r = 0; r < rounds; r++) {
    let row = 0
    for (const c of permitCases) {
      for (const v of permitVariants) {
        const measured = await timeRun(c.ops, () => c.run(v))
        permitRows[row]!.nsPerOp.push(measured.nsPerOp)
        permitRows[row]!.bytesPerOp.push(measured.bytesPerOp)
        row++
      }
    }
    for (const [i, v] of deadlineVariants.entries()) {
      const measured = await timeRun(requests, v.run)
      deadlineRows[i]!.nsPerOp.push(measured.nsPerOp)
      deadlineRows[i]!.bytesPerOp.push(measured.bytesPerOp)
    }
    if (r < 3) {
      for (const row of churnRows) {
        const measured = churnInChild(row.variant)
        row.nsPerOp.push(measured.nsPerOp)
        row.promotedMb.push(measured.promotedMb)
      }
    }
    console.log(`round ${r + 1}/${rounds} done`)
  }
  const order: Array<{ variant: string; holderTurnsBeforeWaiter: number }> = []
  for (const v of permitVariants.slice(1)) {
    order.push({ variant: v.name, holderTurnsBeforeWaiter: await holderTurnsBeforeWaiter(v) })
  }

  const summary = {
    node: process.version,
    effect: "4.1.0",
    rounds,
    permits: permitRows.map((row) => ({
      ...row,
      medianNsPerOp: round1(median(row.nsPerOp)),
      medianBytesPerOp: Math.round(median(row.bytesPerOp))
    })),
    fifo: order,
    deadlines: deadlineRows.map((row) => ({
      ...row,
      medianNsPerOp: round1(median(row.nsPerOp)),
      medianBytesPerOp: Math.round(median(row.bytesPerOp))
    })),
    tables: churnRows.map((row) => ({
      ...row,
      medianNsPerOp: median(row.nsPerOp),
      medianPromotedMb: median(row.promotedMb)
    }))
  }
  const lines = [
    "# Runtime parts: hand-made against Effect 4's own",
    "",
    `\`npx tsx bench/runtimeParts.ts\`: compiled, on plain node ${process.version}, effect 4.1.0; ${rounds} alternating ` +
    "rounds, median; allocations from V8's sampling heap profile (garbage included).",
    "",
    "## Permits (ns and bytes per permit taken and given back)",
    "",
    "| case | variant | ns/op | bytes/op |",
    "| --- | --- | ---: | ---: |",
    ...summary.permits.map((row) =>
      `| ${row.case} | ${row.variant} | ${row.medianNsPerOp} | ${row.medianBytesPerOp} |`
    ),
    "",
    "A holder that gives its only permit back and takes it again at once, 100 times, while another fiber waits: " +
    "turns the holder had before the waiter was served (0 = first in, first out).",
    "",
    "| variant | holder's turns first |",
    "| --- | ---: |",
    ...order.map((row) => `| ${row.variant} | ${row.holderTurnsBeforeWaiter} |`),
    "",
    `## Deadlines (${
      requests.toLocaleString("en")
    } requests, ${inFlight} in flight, answered on the next turn; per request)`,
    "",
    "| variant | ns/request | bytes/request |",
    "| --- | ---: | ---: |",
    ...summary.deadlines.map((row) => `| ${row.variant} | ${row.medianNsPerOp} | ${row.medianBytesPerOp} |`),
    "",
    `## Tables under churn (${live} live entries of ~1 KB, ${
      churnOps.toLocaleString("en")
    } added and removed; 3 rounds)`,
    "",
    "| variant | ns per add+remove | MB promoted |",
    "| --- | ---: | ---: |",
    ...summary.tables.map((row) => `| ${row.variant} | ${row.medianNsPerOp} | ${row.medianPromotedMb} |`),
    "",
    ...conclusions,
    ""
  ]
  mkdirSync(join(repoRoot, "bench", "results"), { recursive: true })
  writeFileSync(join(repoRoot, "bench", "results", "runtime-parts.md"), lines.join("\n"))
  writeFileSync(join(repoRoot, "bench", "results", "runtime-parts.json"), `${JSON.stringify(summary, null, 2)}\n`)
  console.log(lines.join("\n"))
}

const churnChild = (variant: string) => {
  const run = churn[variant]!
  const start = process.hrtime.bigint()
  const size = run()
  console.log(`churn-ns=${Number(process.hrtime.bigint() - start) / churnOps} size=${size}`)
}

const fromSource = import.meta.url.endsWith(".ts")
const churnIndex = process.argv.indexOf("--churn")
if (churnIndex >= 0) churnChild(process.argv[churnIndex + 1]!)
else {
  ;(fromSource
    ? runCompiled("hookrelay-runtime-parts", ["src/runtime", "bench/support"], "bench/runtimeParts.ts", {
      execArgv: ["--expose-gc"]
    })
    : main().then(() => 0)).then((code) => process.exit(code), (error) => {
      console.error(error)
      process.exit(1)
    })
}
