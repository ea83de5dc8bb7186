/**
 * A repro, not a benchmark: Effect fibers that suspend in `Effect.async` and resume later are promoted to the old
 * generation, while the same work finished synchronously is not. Found while looking for why the server promotes
 * ~600–750 KB/s at 100 requests/s whatever the route (README, "Young-generation survival in delivery").
 *
 *   MODE=plain|sync|async node --min-semi-space-size=4 --max-semi-space-size=4 --trace-gc-nvp \
 *     bench/support/promotionRepro.mjs
 *
 * then send ~100 GET requests a second to http://127.0.0.1:45998/ for 15 s and read `new_space_survived` and
 * `promoted` of the scavenges. Measured (Node 20.20, effect 3.22.4, fixed 4 MB semi-space, ~130 requests between
 * scavenges): plain and sync ~10 KB survive a scavenge; async ~560 KB survive and ~560 KB are promoted (~4 KB a
 * request), whether the resume comes from the response's write callback or from `setImmediate`, and with
 * `FiberScope.globalScope`'s root set bypassed. A plain `http` server whose write callback holds the same garbage
 * promotes nothing. A heap snapshot (after a full collection) holds none of it: young objects kept by old garbage.
 * Not the scheduler: `Scheduler.timer(0)`, a microtask resume and `Effect.runCallback` promote the same, while a fiber
 * that suspends with `Effect.yieldNow()` instead of `Effect.async` promotes nothing (~10 KB a scavenge).
 *
 * Bisected further (same load, steady scavenges only, KB promoted a scavenge; throw-away variants of this file that
 * patch `FiberRuntime.prototype` or build the `Async` primitive by hand):
 * - `Effect.async((resume) => { resume(Effect.void) })` with the answer written before, so that the fiber holds no
 *   request object: ~195. What is promoted is the fiber itself (its fiber refs, queue, stack: ~1.5 KB a request).
 * - `initiateAsync`'s callback (what the register receives) holding the fiber through a box that is emptied when it
 *   is called: 198 → 65. Boxing only `_asyncInterruptor`'s copy changes nothing; boxing only what is passed to the
 *   register does. So the retained path is register → callback → fiber, not the fiber's own fields.
 * - `async`'s proxy (`backingResume`, `pendingEffect`) without the `custom` commit wrapper: ~150; clearing
 *   `backingResume` once it has been called: ~9. The commit wrapper alone, with a static register: ~2.
 * - A hand-built `Async` primitive whose register keeps the callback in its closure: ~2 in one file and ~155 in
 *   another with the same statements, so the retainer depends on the state of the JIT, not on the code's shape;
 *   a pure-JS imitation of the same closures and scheduling (no Effect) promotes nothing.
 * - Patched `initiateAsync` (the callback drops the fiber after its first call) in a copy of node_modules: this
 *   file's `async` mode 444–458 → 320–325 (the register closure still holds the response), the variant above
 *   195 → 65. Not adopted: it patches a dependency and removes only part of it. Not found: the old object that
 *   holds the registration's closure context (a heap snapshot, taken after a full collection, never shows it).
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
    Effect.runFork(Effect.async((resume) => {
      answer(response)
      setImmediate(() => resume(Effect.void))
    }))
  } else answer(response)
}).listen(45998, "127.0.0.1", () => console.log(`listening (${mode}); ${parsed} parsed so far`))
