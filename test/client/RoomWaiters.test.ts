import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { makeRoomWaiters } from "../../src/client/RoomWaiters.js"

const flushMicrotasks = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("calls waiting for room in the queue", () => {
  it.live("are queued first come, first served, as much as fits each time room is made", () =>
    Effect.gen(function*() {
      const queue: Array<number> = []
      let room = 0
      const waiters = makeRoomWaiters<number>((item) => room > 0 && (room--, queue.push(item), true))
      const answers: Array<[number, boolean]> = []
      for (const item of [1, 2, 3]) void waiters.wait(item).then((queued) => answers.push([item, queued]))
      room = 2
      waiters.onRoom()
      waiters.onRoom() // a second take before the microtask: one pass
      yield* Effect.promise(flushMicrotasks)
      expect(queue).toEqual([1, 2])
      expect(answers).toEqual([[1, true], [2, true]])
      const drained = yield* Effect.forkChild(waiters.drained)
      room = 5
      waiters.onRoom()
      yield* Fiber.join(drained) // completes once the last waiter is queued
      expect(queue).toEqual([1, 2, 3])
    }))

  it.live("are answered false at close, and their items handed back", () =>
    Effect.gen(function*() {
      const waiters = makeRoomWaiters<string>(() => false)
      const answer = waiters.wait("a")
      expect(waiters.refuseAll()).toEqual(["a"])
      expect(yield* Effect.promise(() => answer)).toBe(false)
      yield* waiters.drained
    }))
})
