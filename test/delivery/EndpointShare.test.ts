import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { EndpointGuard } from "../../src/delivery/EndpointGuard.js"
import type { GuardEvent } from "../../src/delivery/EndpointGuard.js"
import { followEvery, makeLinks } from "../../src/delivery/EndpointGuardsLink.js"
import { type EndpointKey, endpointKeyString } from "../../src/domain/EndpointKey.js"
import type { Endpoint } from "../../src/domain/Settings.js"
import type { EndpointShareShape } from "../../src/store/EndpointShare.js"
import { makeMemory } from "../support/memoryEndpointShare.js"

/**
 * The deployment's circuits and rate limits (`EndpointShare` in memory, `EndpointGuardsLink`) on the TestClock:
 * several "replicas", each its guard and links over one share, as the processes of a deployment over PostgreSQL.
 */

const key: EndpointKey = { sourceId: "shop", destinationId: "default", url: "https://a.example/hook" }
const failure = AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })
const success = AttemptOutcome.Success({ status: 200 })

/** Every call a replica makes to the share, by operation. */
const counted = (share: EndpointShareShape, calls: Map<string, number>): EndpointShareShape => {
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1)
  return {
    reserveStarts: (...args) => Effect.andThen(Effect.sync(() => count("reserveStarts")), share.reserveStarts(...args)),
    failed: (...args) => Effect.andThen(Effect.sync(() => count("failed")), share.failed(...args)),
    succeeded: (...args) => Effect.andThen(Effect.sync(() => count("succeeded")), share.succeeded(...args)),
    claimProbe: (...args) => Effect.andThen(Effect.sync(() => count("claimProbe")), share.claimProbe(...args)),
    probeAborted: (...args) => Effect.andThen(Effect.sync(() => count("probeAborted")), share.probeAborted(...args)),
    circuits: Effect.andThen(Effect.sync(() => count("circuits")), share.circuits)
  }
}

const replicas = (count: number, endpoint: Endpoint, calls = new Map<string, number>()) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const memory = makeMemory(clock)
    const events: Array<{ readonly replica: number; readonly event: GuardEvent }> = []
    return yield* Effect.forEach(Array.from({ length: count }, (_, index) => index), (replica) =>
      Effect.gen(function*() {
        const emit = () => (event: GuardEvent) => void events.push({ replica, event })
        const links = yield* makeLinks(counted(memory.process(), calls), clock, emit)
        const guard = new EndpointGuard(key.url, clock, emit(), links.linkFor(key))
        guard.configure(endpoint)
        links.adopt(endpointKeyString(key), guard)
        yield* links.follow
        return guard
      })).pipe(Effect.map((guards) => ({ guards, events })))
  })

/** The most start times any 1-second window holds. */
const busiestSecond = (times: ReadonlyArray<number>): number => {
  const sorted = [...times].sort((a, b) => a - b)
  let most = 0
  let from = 0
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[to]! - sorted[from]! >= 1000) from++
    most = Math.max(most, to - from + 1)
  }
  return most
}

describe("EndpointShare: the deployment's rate limit (TestClock)", () => {
  it.effect("three replicas at 100/s: no second holds more than 101 starts, every attempt goes", () =>
    Effect.scoped(Effect.gen(function*() {
      const { guards } = yield* replicas(3, { url: key.url, rateLimit: { perSecond: 100 } })
      const starts: Array<number> = []
      const fibers = yield* Effect.forEach(
        Array.from({ length: 600 }, (_, index) => index),
        (index) =>
          guards[index % 3]!.pass(Number.MAX_SAFE_INTEGER).pipe(
            Effect.tap(() => Clock.currentTimeMillis.pipe(Effect.map((now) => starts.push(now)))),
            Effect.forkChild
          )
      )
      for (let step = 0; step < 700; step++) yield* TestClock.adjust(10)
      for (const fiber of fibers) expect(yield* Fiber.join(fiber)).toBe("go")
      expect(starts).toHaveLength(600)
      expect(busiestSecond(starts)).toBeLessThanOrEqual(101)
      // Evenly spaced over the deployment: 600 starts take about 6 s, not 2.
      expect(Math.max(...starts) - Math.min(...starts)).toBeGreaterThanOrEqual(5_900)
    })))
})

describe("EndpointShare: what a healthy endpoint costs (TestClock)", () => {
  it.effect("no limit, no failure: no call to the share per attempt, only the follow read", () =>
    Effect.scoped(Effect.gen(function*() {
      const calls = new Map<string, number>()
      const { guards } = yield* replicas(2, { url: key.url }, calls)
      for (let i = 0; i < 1_000; i++) {
        const guard = guards[i % 2]!
        expect(guard.tryPass()).toBe(true)
        guard.report(success, false)
      }
      yield* TestClock.adjust(1_000)
      // Two replicas, each reading once at start and every half second.
      expect([...calls.keys()]).toStrictEqual(["circuits"])
      expect(calls.get("circuits")).toBe(2 * (1 + 1_000 / followEvery))
    })))

  it.effect("a job whose window ends before the next instant is unavailable, and leaves it to the next job", () =>
    Effect.scoped(Effect.gen(function*() {
      const { guards } = yield* replicas(1, { url: key.url, rateLimit: { perSecond: 10 } })
      const guard = guards[0]!
      const now = yield* Clock.currentTimeMillis
      expect(yield* guard.pass(now + 150)).toBe("go")
      const second = yield* Effect.forkChild(guard.pass(now + 150))
      yield* TestClock.adjust(100)
      expect(yield* Fiber.join(second)).toBe("go")
      expect(yield* guard.pass(now + 150)).toBe("unavailable")
      const fourth = yield* Effect.forkChild(guard.pass(Number.MAX_SAFE_INTEGER))
      yield* TestClock.adjust(100)
      expect(yield* Fiber.join(fourth)).toBe("go")
    })))
})

describe("EndpointShare: the deployment's circuit (TestClock)", () => {
  it.effect("failures count across replicas, one opening event, one probe, recovery followed by all", () =>
    Effect.scoped(Effect.gen(function*() {
      const { events, guards } = yield* replicas(3, { url: key.url, circuit: { failureThreshold: 3 } })
      const [a, b, c] = guards as [EndpointGuard, EndpointGuard, EndpointGuard]
      a.report(failure, false)
      b.report(failure, false)
      yield* TestClock.adjust(1)
      expect(a.state).toBe("closed")
      c.report(failure, false)
      yield* TestClock.adjust(1)
      expect(c.state).toBe("open")
      yield* TestClock.adjust(followEvery)
      expect(guards.map((guard) => guard.state)).toStrictEqual(["open", "open", "open"])
      expect(events.map(({ event }) => event.type)).toStrictEqual(["endpoint.circuit_opened"])

      // Every replica holds a job; at the cool-off's end exactly one of them probes.
      const held = yield* Effect.forEach(guards, (guard) => Effect.forkChild(guard.pass(Number.MAX_SAFE_INTEGER)))
      yield* TestClock.adjust(5_000)
      const probes = held.filter((fiber) => fiber.pollUnsafe() !== undefined)
      expect(probes).toHaveLength(1)
      const prober = guards[held.indexOf(probes[0]!)]!
      expect(yield* Fiber.join(probes[0]!)).toBe("probe")
      // The probe fails: still one probe at a time, the next after a doubled cool-off.
      prober.report(failure, true)
      yield* TestClock.adjust(9_999)
      expect(held.filter((fiber) => fiber.pollUnsafe() !== undefined)).toHaveLength(1)
      yield* TestClock.adjust(1)
      const second = held.filter((fiber) => fiber.pollUnsafe() !== undefined && fiber !== probes[0])
      expect(second).toHaveLength(1)
      expect(yield* Fiber.join(second[0]!)).toBe("probe")
      const secondProber = guards[held.indexOf(second[0]!)]!
      secondProber.report(success, true)
      yield* TestClock.adjust(1)
      expect(secondProber.state).toBe("closed")
      // The third replica's held job goes within one read of the circuits.
      yield* TestClock.adjust(followEvery)
      expect(guards.map((guard) => guard.state)).toStrictEqual(["closed", "closed", "closed"])
      for (const fiber of held) expect(fiber.pollUnsafe()).toBeDefined()
      expect(events.map(({ event }) => event.type)).toStrictEqual(["endpoint.circuit_opened", "endpoint.recovered"])
    })))

  it.effect("a success anywhere resets the deployment's count: failures must be consecutive", () =>
    Effect.scoped(Effect.gen(function*() {
      const { events, guards } = yield* replicas(2, { url: key.url, circuit: { failureThreshold: 3 } })
      const [a, b] = guards as [EndpointGuard, EndpointGuard]
      a.report(failure, false)
      a.report(failure, false)
      yield* TestClock.adjust(followEvery)
      expect(b.consecutiveFailures).toBe(2)
      b.report(success, false)
      yield* TestClock.adjust(followEvery)
      a.report(failure, false)
      yield* TestClock.adjust(followEvery)
      expect(guards.map((guard) => guard.state)).toStrictEqual(["closed", "closed"])
      expect(a.consecutiveFailures).toBe(1)
      expect(events).toHaveLength(0)
    })))

  it.effect("a probe interrupted gives the probe to the next replica at once", () =>
    Effect.scoped(Effect.gen(function*() {
      const { guards } = yield* replicas(2, { url: key.url, circuit: { failureThreshold: 1 } })
      const [a, b] = guards as [EndpointGuard, EndpointGuard]
      a.report(failure, false)
      yield* TestClock.adjust(followEvery)
      yield* TestClock.adjust(5_000)
      expect(yield* a.pass(Number.MAX_SAFE_INTEGER)).toBe("probe")
      const waiting = yield* Effect.forkChild(b.pass(Number.MAX_SAFE_INTEGER))
      yield* TestClock.adjust(followEvery)
      expect(waiting.pollUnsafe()).toBeUndefined()
      a.probeAborted()
      yield* TestClock.adjust(followEvery)
      expect(yield* Fiber.join(waiting)).toBe("probe")
    })))
})
