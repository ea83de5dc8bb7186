/**
 * Counts the instructions Effect's fiber runtime runs in a process, for measuring what a request costs in fiber steps
 * (bench/NOTES.md, "Fiber steps of a tracking request"). A preload, not part of hookrelay:
 *
 *   node --import ./bench/support/fiberSteps.mjs dist/main.js
 *
 * Every op-code method of the runtime's fiber (`Sync`, `OnSuccess`, `Async`, `Commit`, …) is wrapped to count its
 * calls. On SIGUSR2 it writes the counts since the last SIGUSR2 as one JSON line to stderr (`{"fiberSteps":…, "ops":
 * {…}, "fibers":…}`) and starts over, so that a load of N requests between two signals gives steps per request. The
 * wrappers cost time: read the counts, not the speed, of a process that runs with it. Plain JavaScript, so that the
 * compiled server runs on plain `node` as `npm start` runs it.
 */
/* global process */
import { Effect } from "effect"

// The runtime's fiber class is not exported: its prototype is taken from a fiber.
const fiberPrototype = Object.getPrototypeOf(Effect.runFork(Effect.void))
const opCode = /^[A-Z][A-Za-z]+$/

let counts = new Map()
let fibers = new Set()

for (const name of Object.getOwnPropertyNames(fiberPrototype)) {
  const method = fiberPrototype[name]
  if (typeof method !== "function" || (!opCode.test(name) && name !== "evaluateEffect")) continue
  fiberPrototype[name] = function(...args) {
    counts.set(name, (counts.get(name) ?? 0) + 1)
    if (name === "evaluateEffect") fibers.add(this.id().id)
    return method.apply(this, args)
  }
}

process.on("SIGUSR2", () => {
  let fiberSteps = 0
  for (const [name, count] of counts) if (name !== "evaluateEffect") fiberSteps += count
  process.stderr.write(
    `${JSON.stringify({ fiberSteps, ops: Object.fromEntries(counts), fibers: fibers.size })}\n`
  )
  counts = new Map()
  fibers = new Set()
})
