import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { FifoGate } from "../../src/runtime/FifoGate.js"

describe("FifoGate", () => {
  it.effect("lets `permits` run at once and the rest in arrival order", () =>
    Effect.gen(function*() {
      const gate = new FifoGate(2)
      const release = yield* Deferred.make<void>()
      const started: Array<number> = []
      const task = (n: number) =>
        gate.withPermit(Effect.andThen(Effect.sync(() => started.push(n)), Deferred.await(release)))
      const fibers = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => Effect.forkChild(task(n)))
      yield* Effect.yieldNow
      expect(started).toStrictEqual([1, 2])
      expect(gate.waiting).toBe(3)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.joinAll(fibers)
      expect(started).toStrictEqual([1, 2, 3, 4, 5])
    }))

  it.effect("a waiter interrupted in the queue gives up its turn; a holder interrupted gives back its permit", () =>
    Effect.gen(function*() {
      const gate = new FifoGate(1)
      const holder = yield* Effect.forkChild(gate.withPermit(Effect.never))
      yield* Effect.yieldNow
      const queued = yield* Effect.forkChild(gate.withPermit(Effect.succeed("queued")))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(queued)
      expect(gate.waiting).toBe(0)
      yield* Fiber.interrupt(holder)
      expect(yield* gate.withPermit(Effect.succeed("free again"))).toBe("free again")
    }))

  it.effect("tryTake shares the permits with withPermit; giveBack hands one to the longest waiter", () =>
    Effect.gen(function*() {
      const gate = new FifoGate(2)
      expect(gate.tryTake()).toBe(true)
      expect(gate.tryTake()).toBe(true)
      expect(gate.tryTake()).toBe(false)
      const queued = yield* Effect.forkChild(gate.withPermit(Effect.succeed("after a giveBack")))
      yield* Effect.yieldNow
      expect(gate.waiting).toBe(1)
      gate.giveBack()
      expect(yield* Fiber.join(queued)).toBe("after a giveBack")
      // The waiter's permit came back to the gate when it finished: one free, one still taken.
      expect(gate.tryTake()).toBe(true)
      expect(gate.tryTake()).toBe(false)
    }))
})

describe("FifoGate: first in, first out", () => {
  it.effect("a holder that gives its permit back and takes it again at once goes behind the waiter", () =>
    Effect.gen(function*() {
      const gate = new FifoGate(1)
      const order: Array<string> = []
      const turn = (name: string) => gate.withPermit(Effect.sync(() => order.push(name)))
      yield* gate.take
      const waiter = yield* Effect.forkChild(turn("waiter"))
      yield* Effect.yieldNow
      // Effect's Semaphore wakes its waiters in a task scheduled after the release: the releasing fiber took the
      // permit back before the waiter ran (a loop of transactions starved a commit on the SQLite lock).
      yield* gate.release
      yield* turn("holder again")
      yield* Fiber.join(waiter)
      expect(order).toStrictEqual(["waiter", "holder again"])
    }))
})
