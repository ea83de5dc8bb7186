import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { KeyedSlots, Slots } from "../../src/runtime/Slots.js"

// Operations on a table of small keys: set (or overwrite), delete, read.
const operations = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant("set" as const), key: fc.integer({ min: 0, max: 20 }), value: fc.string() }),
    fc.record({ op: fc.constant("delete" as const), key: fc.integer({ min: 0, max: 20 }) })
  ),
  { maxLength: 200 }
)

describe("Slots", () => {
  it("gives each value a slot of its own until it is taken, then reuses the slot", () => {
    const slots = new Slots<string>()
    const a = slots.add("a")
    const b = slots.add("b")
    expect(a).not.toBe(b)
    expect(slots.get(a)).toBe("a")
    expect(slots.size).toBe(2)
    expect(slots.take(a)).toBe("a")
    expect(slots.take(a)).toBeUndefined()
    expect(slots.get(a)).toBeUndefined()
    expect(slots.size).toBe(1)
    expect(slots.add("c")).toBe(a)
    expect(slots.values().sort()).toEqual(["b", "c"])
  })

  it("drains every value and starts over empty", () => {
    const slots = new Slots<number>()
    for (let i = 0; i < 5; i++) slots.add(i)
    slots.take(2)
    expect(slots.drain().sort()).toEqual([0, 1, 3, 4])
    expect(slots.size).toBe(0)
    expect(slots.values()).toEqual([])
    expect(slots.add(9)).toBe(0)
  })

  it("goes through each value with its slot, which it may take on the way", () => {
    const slots = new Slots<number>()
    for (let i = 0; i < 5; i++) slots.add(i * 10)
    slots.take(1)
    const seen: Array<[number, number]> = []
    slots.forEach((value, slot) => {
      seen.push([value, slot])
      if (value >= 30) slots.take(slot)
    })
    expect(seen).toEqual([[0, 0], [20, 2], [30, 3], [40, 4]])
    expect(slots.values()).toEqual([0, 20])
  })
})

describe("KeyedSlots", () => {
  it("answers as a Map does after any sequence of sets and deletes", () => {
    fc.assert(fc.property(operations, (steps) => {
      const table = new KeyedSlots<number, string>()
      const map = new Map<number, string>()
      for (const step of steps) {
        if (step.op === "set") {
          table.set(step.key, step.value)
          map.set(step.key, step.value)
        } else {
          expect(table.delete(step.key)).toBe(map.delete(step.key))
        }
        expect(table.size).toBe(map.size)
      }
      for (let key = 0; key <= 20; key++) {
        expect(table.get(key)).toBe(map.get(key))
        expect(table.has(key)).toBe(map.has(key))
      }
      expect(table.keys().sort()).toEqual([...map.keys()].sort())
      expect(table.values().sort()).toEqual([...map.values()].sort())
    }))
  })
})
