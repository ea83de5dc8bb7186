/**
 * A repro, not a benchmark: a long-lived `Map` whose entries come and go promotes nearly every value it ever held
 * (`src/runtime/Slots.ts` explains why and is the fix).
 *
 *   MODE=map|slots|none node --trace-gc-nvp bench/support/mapChurnRepro.mjs
 *
 * and add up `promoted` over the scavenges. 400 000 entries of ~1 KB, 256 live at a time: `map` keeps them in a
 * `Map`, `slots` in an array of slots indexed through a `Map` of small integers, `none` keeps them in a ring of 256
 * (the least any table can do). `map` promotes many times what `slots` does, and `slots` stays near `none`.
 */
/* global console, process */
const mode = process.env.MODE ?? "map"
const live = 256
const operations = 400_000
const payload = () => ({ numbers: new Array(100).fill(0), text: `x${Math.random()}` })
let sink = 0

if (mode === "map") {
  const table = new Map()
  for (let i = 0; i < operations; i++) {
    table.set(`job-${i}`, payload())
    if (i >= live) table.delete(`job-${i - live}`)
    sink += table.size
  }
} else if (mode === "slots") {
  const slotOf = new Map()
  const slots = []
  const free = []
  for (let i = 0; i < operations; i++) {
    const slot = free.length > 0 ? free.pop() : slots.length
    slots[slot] = payload()
    slotOf.set(`job-${i}`, slot)
    if (i >= live) {
      const leaving = `job-${i - live}`
      const freed = slotOf.get(leaving)
      slotOf.delete(leaving)
      slots[freed] = undefined
      free.push(freed)
    }
    sink += slotOf.size
  }
} else {
  const ring = new Array(live)
  for (let i = 0; i < operations; i++) {
    ring[i % live] = payload()
    sink += 1
  }
}
console.log(mode, sink)
