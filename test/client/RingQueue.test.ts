import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { boundedRing } from "../../src/client/RingQueue.js"

describe("the client's ring-backed queue", () => {
  it.effect("keeps FIFO order across the end of the ring, and polls up to the limit asked", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<number>(4)
      for (const value of [1, 2, 3]) expect(queue.offerUnsafe(value)).toBe(true)
      expect(yield* queue.takeUpTo(2)).toEqual([1, 2])
      for (const value of [4, 5, 6]) expect(queue.offerUnsafe(value)).toBe(true) // wraps around
      expect(queue.offerUnsafe(7)).toBe(false) // full: 3, 4, 5, 6
      expect(queue.size()).toBe(4)
      expect(yield* queue.takeUpTo(10)).toEqual([3, 4, 5, 6])
      expect(queue.size()).toBe(0)
      // Empty: a take waits for the next element.
      const next = yield* Effect.forkChild(queue.takeUpTo(10))
      yield* Effect.yieldNow
      expect(next.pollUnsafe()).toBeUndefined()
      expect(queue.offerUnsafe(8)).toBe(true)
      expect(yield* Fiber.join(next)).toEqual([8])
    }))

  it.effect("a full queue makes an offer wait until a take makes room (back pressure)", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<string>(2)
      yield* queue.offerAll(["a", "b"])
      const waiting = yield* Effect.forkChild(queue.offer("c"))
      yield* Effect.yieldNow
      expect(waiting.pollUnsafe()).toBeUndefined()
      expect(yield* queue.takeUpTo(1)).toEqual(["a"])
      expect(yield* Fiber.join(waiting)).toBe(true)
      expect(yield* queue.takeUpTo(10)).toEqual(["b", "c"])
    }))

  it.effect("offerAll of more than fits queues what fits and waits with the rest", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<number>(3)
      const offering = yield* Effect.forkChild(queue.offerAll([1, 2, 3, 4, 5]))
      yield* Effect.yieldNow
      expect(yield* queue.takeUpTo(3)).toEqual([1, 2, 3])
      yield* Fiber.join(offering)
      expect(yield* queue.takeUpTo(10)).toEqual([4, 5])
    }))

  it.effect("a take makes room: onRoom is called; shutting down answers waiting offers false and refuses later ones", () =>
    Effect.gen(function*() {
      let rooms = 0
      const queue = yield* boundedRing<number>(1, () => rooms++)
      expect(queue.offerUnsafe(1)).toBe(true)
      const waiting = yield* Effect.forkChild(queue.offer(2))
      yield* Effect.yieldNow
      expect(yield* queue.takeUpTo(10)).toEqual([1])
      expect(rooms).toBe(1)
      expect(yield* Fiber.join(waiting)).toBe(true) // 2 took the room
      const refused = yield* Effect.forkChild(queue.offer(3))
      yield* Effect.yieldNow
      yield* queue.shutdown
      expect(yield* Fiber.join(refused)).toBe(false)
      expect(queue.offerUnsafe(4)).toBe(false)
    }))
})
