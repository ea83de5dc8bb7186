import { describe, expect, it } from "@effect/vitest"
import type { Prepared } from "../../src/client/Calls.js"
import { makeSlabs, slabBytes } from "../../src/client/Slabs.js"
import { maxMessageBytes } from "../../src/domain/Limits.js"

const prepared = (index: number, size: number): Prepared => {
  const head = `{"i":${index},"p":"`
  const json = head + "é".repeat(Math.max(0, Math.floor((size - head.length - 2) / 2))) + "\"}"
  return { type: "track", messageId: `m-${index}`, json, bytes: Buffer.byteLength(json), calledAt: 0 }
}

const read = (slabs: ReturnType<typeof makeSlabs>, message: ReturnType<ReturnType<typeof makeSlabs>["store"]>) => {
  const target = Buffer.alloc(message.bytes)
  slabs.copyOut(message, target, 0)
  return target.toString("utf8")
}

describe("the slabs that hold queued messages' JSON", () => {
  it("the largest message fits in one slab", () => {
    expect(maxMessageBytes).toBeLessThanOrEqual(slabBytes)
  })

  it("gives back every message intact across slab boundaries, with slabs reused as they empty", () => {
    const slabs = makeSlabs()
    const live: Array<[Prepared, ReturnType<typeof slabs.store>]> = []
    let index = 0
    // A FIFO with about two slabs' worth in it at any time, through ten slabs of messages.
    while (index < 1_000) {
      const next = prepared(index++, 200 + (index * 7919) % 9_000)
      live.push([next, slabs.store(next)])
      if (live.length > 40) {
        const [expected, message] = live.shift()!
        expect(read(slabs, message)).toBe(expected.json)
      }
    }
    for (const [expected, message] of live) expect(read(slabs, message)).toBe(expected.json)
  })

  it("a released message frees its bytes once; reading it afterwards is refused", () => {
    const slabs = makeSlabs()
    const first = slabs.store(prepared(1, 100))
    slabs.release(first)
    slabs.release(first) // idempotent: must not free the bytes of a later message
    const second = slabs.store(prepared(2, 100))
    const third = slabs.store(prepared(3, 100))
    expect(read(slabs, second)).toBe(prepared(2, 100).json)
    expect(read(slabs, third)).toBe(prepared(3, 100).json)
    expect(() => read(slabs, first)).toThrow()
  })
})
