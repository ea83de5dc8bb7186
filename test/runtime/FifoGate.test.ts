import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
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

/** Lets forked fibers run up to their next wait (TestClock does not move). */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
const state = (gate: FifoGate) => ({ free: gate.available, waiting: gate.waiting })

describe("FifoGate: a bounded wait (takeWithin, ingest admission's commit slots)", () => {
  it.effect("hands permits first come, first served and gives up after the wait, holding nothing", () =>
    Effect.gen(function*() {
      const permits = new FifoGate(2)
      expect(yield* permits.takeWithin("2 seconds")).toBe(true)
      expect(yield* permits.takeWithin("2 seconds")).toBe(true)
      const third = yield* Effect.forkChild(permits.takeWithin("2 seconds"))
      const fourth = yield* Effect.forkChild(permits.takeWithin("2 seconds"))
      yield* settle
      expect(state(permits)).toEqual({ free: 0, waiting: 2 })
      yield* TestClock.adjust("1999 millis")
      yield* permits.release
      // The oldest waiter got the released permit within its wait; the other one runs out of time.
      expect(yield* Fiber.join(third)).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(fourth)).toBe(false)
      expect(state(permits)).toEqual({ free: 0, waiting: 0 })
      yield* permits.release
      yield* permits.release
      expect(state(permits)).toEqual({ free: 2, waiting: 0 })
    }))

  it.effect("a waiter that is interrupted, even inside an uninterruptible caller's region, holds no permit", () =>
    Effect.gen(function*() {
      const permits = new FifoGate(1)
      expect(yield* permits.takeWithin("1 second")).toBe(true)
      const waiter = yield* Effect.forkChild(permits.takeWithin("10 seconds"))
      yield* settle
      yield* Fiber.interrupt(waiter)
      expect(state(permits)).toEqual({ free: 0, waiting: 0 })
      // The wait is bounded inside an uninterruptible region too (the HTTP handlers run in one).
      const bounded = yield* Effect.forkChild(Effect.uninterruptible(permits.takeWithin("3 seconds")))
      yield* TestClock.adjust("3 seconds")
      expect(yield* Fiber.join(bounded)).toBe(false)
      yield* permits.release
      expect(state(permits)).toEqual({ free: 1, waiting: 0 })
    }))

  it.effect("takes a free permit at once, never past a waiter; giving it back serves the oldest waiter first", () =>
    Effect.gen(function*() {
      const permits = new FifoGate(1)
      expect(permits.tryTake()).toBe(true)
      expect(permits.tryTake()).toBe(false)
      const waiter = yield* Effect.forkChild(permits.takeWithin("1 second"))
      yield* settle
      permits.giveBack()
      // Handed to the waiter, not freed: a synchronous taker cannot jump the queue.
      expect(permits.tryTake()).toBe(false)
      expect(yield* Fiber.join(waiter)).toBe(true)
      permits.giveBack()
      expect(state(permits)).toEqual({ free: 1, waiting: 0 })
      expect(permits.tryTake()).toBe(true)
    }))
})
