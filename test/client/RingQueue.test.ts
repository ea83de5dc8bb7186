import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Queue } from "effect"
import { boundedRing } from "../../src/client/RingQueue.js"

describe("the client's ring-backed queue", () => {
  it.effect("keeps FIFO order across the end of the ring, and polls up to the limit asked", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<number>(4)
      for (const value of [1, 2, 3]) expect(queue.unsafeOffer(value)).toBe(true)
      expect(Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, 2))).toEqual([1, 2])
      for (const value of [4, 5, 6]) expect(queue.unsafeOffer(value)).toBe(true) // wraps around
      expect(queue.unsafeOffer(7)).toBe(false) // full: 3, 4, 5, 6
      expect(yield* Queue.size(queue)).toBe(4)
      expect(Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, 10))).toEqual([3, 4, 5, 6])
      expect(Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, 10))).toEqual([])
    }))

  it.effect("a full queue makes an offer wait until a take makes room (back pressure)", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<string>(2)
      yield* Queue.offerAll(queue, ["a", "b"])
      const waiting = yield* Effect.fork(Queue.offer(queue, "c"))
      yield* Effect.yieldNow()
      expect(waiting.unsafePoll()).toBeNull()
      expect(yield* Queue.take(queue)).toBe("a")
      expect(yield* Fiber.join(waiting)).toBe(true)
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(queue))).toEqual(["b", "c"])
    }))

  it.effect("offerAll of more than fits queues what fits and waits with the rest", () =>
    Effect.gen(function*() {
      const queue = yield* boundedRing<number>(3)
      const offering = yield* Effect.fork(Queue.offerAll(queue, [1, 2, 3, 4, 5]))
      yield* Effect.yieldNow()
      expect(Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, 3))).toEqual([1, 2, 3])
      yield* Fiber.join(offering)
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(queue))).toEqual([4, 5])
    }))
})
