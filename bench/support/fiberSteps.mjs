/**
 * Counts the instructions Effect's fiber runtime runs in a process, for measuring what a request costs in fiber steps
 * (bench/NOTES.md, "Fiber steps of a tracking request"). A preload, not part of hookrelay:
 *
 *   node --import ./bench/support/fiberSteps.mjs dist/main.js
 *
 * The runtime's fiber counts the steps of each run of its loop (`currentOpCount`, reset when a run starts): its
 * `runLoop` is wrapped to add them up. On SIGUSR2 it writes the counts since the last SIGUSR2 as one JSON line to
 * stderr (`{"fiberSteps":…, "ops": {"runLoop": runs}, "fibers":…}`) and starts over, so that a load of N requests
 * between two signals gives steps per request. Plain JavaScript, so that the compiled server runs on plain `node` as
 * `npm start` runs it.
 */
/* global process */
import { Effect } from "effect"

// The runtime's fiber class is not exported: its prototype is taken from a fiber.
const fiberPrototype = Object.getPrototypeOf(Effect.runFork(Effect.void))
const runLoop = fiberPrototype.runLoop

let steps = 0
let runs = 0
let fibers = new Set()

fiberPrototype.runLoop = function(effect) {
  try {
    return runLoop.call(this, effect)
  } finally {
    steps += this.currentOpCount
    runs += 1
    fibers.add(this.id)
  }
}

process.on("SIGUSR2", () => {
  process.stderr.write(`${JSON.stringify({ fiberSteps: steps, ops: { runLoop: runs }, fibers: fibers.size })}\n`)
  steps = 0
  runs = 0
  fibers = new Set()
})
