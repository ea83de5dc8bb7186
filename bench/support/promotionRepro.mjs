/**
 * A repro, not a benchmark: Effect fibers that suspend in `Effect.async` (`Effect.callback` since Effect 4, which this
 * now runs; the findings below are Effect 3's) and resume later are promoted to the old generation, while the same
 * work finished synchronously is not. Found while looking for why the server promotes at a steady rate whatever the
 * route (bench/NOTES.md, "Young-generation survival in delivery").
 *
 *   MODE=plain|sync|async node --min-semi-space-size=4 --max-semi-space-size=4 --trace-gc-nvp \
 *     bench/support/promotionRepro.mjs
 *
 * then send ~100 GET requests a second to http://127.0.0.1:45998/ for 15 s and read `new_space_survived` and
 * `promoted` of the scavenges. On Node 20 with effect 3: plain and sync leave next to nothing surviving a scavenge;
 * async has most of each request's garbage survive and be promoted, whether the resume comes from the response's
 * write callback or from `setImmediate`, and with `FiberScope.globalScope`'s root set bypassed. A plain `http` server whose write callback holds the same garbage
 * promotes nothing. A heap snapshot (after a full collection) holds none of it: young objects kept by old garbage.
 * Not the scheduler: `Scheduler.timer(0)`, a microtask resume and `Effect.runCallback` promote the same, while a fiber
 * that suspends with `Effect.yieldNow()` instead of `Effect.async` promotes nothing.
 *
 * Cause (found by bisecting, then reading the heap of a stopped process): V8 allocates a function literal assigned
 * straight to a property in the old generation ("pretenured", its guess for methods), and Effect's `async` does
 * `effect.effect_instruction_i0 = (resume) => { backingResume = resume; … }` on every call. That old closure is
 * garbage once the fiber resumes, but a scavenge takes it as live, so its young context (→ the resume callback → the
 * fiber → its stack and whatever the request holds) is copied and then promoted. hookrelay uses effect as published,
 * so its hot paths keep the number of `Effect.async` suspensions per request and per job low instead.
 */
/* global console, process, setImmediate */
import { Effect } from "effect"
import { createServer } from "node:http"

const mode = process.env.MODE ?? "async"
// ~20 KB of short-lived garbage a request, so that scavenges come at a steady pace.
const text = JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ i, s: `x${i}` })))
let parsed = 0

const answer = (response) => {
  response.setHeader("content-type", "application/json")
  response.end("{\"status\":\"ok\"}")
}

createServer((_request, response) => {
  parsed += JSON.parse(text).length
  if (mode === "sync") Effect.runFork(Effect.sync(() => answer(response)))
  else if (mode === "async") {
    Effect.runFork(Effect.callback((resume) => {
      answer(response)
      setImmediate(() => resume(Effect.void))
    }))
  } else answer(response)
}).listen(45998, "127.0.0.1", () => console.log(`listening (${mode}); ${parsed} parsed so far`))
