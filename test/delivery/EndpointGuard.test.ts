import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { AttemptOutcome } from "../../src/delivery/AttemptOutcome.js"
import { deliver } from "../../src/delivery/Deliver.js"
import type { DeliveryJob, EndpointGate } from "../../src/delivery/Deliver.js"
import { EndpointGuard } from "../../src/delivery/EndpointGuard.js"
import type { GuardEvent } from "../../src/delivery/EndpointGuard.js"
import * as Transport from "../../src/delivery/Transport.js"
import type { TransportFailure, TransportResponse } from "../../src/delivery/Transport.js"
import type { Endpoint } from "../../src/domain/Settings.js"
import { FifoGate } from "../../src/runtime/FifoGate.js"
import { encode, recorder } from "./support.js"

const hour = 3_600_000
const A = "https://a.example/hook"
const B = "https://b.example/hook"

const job = (id: string, endpoints: ReadonlyArray<Endpoint>, fields: Partial<DeliveryJob> = {}): DeliveryJob => ({
  jobId: id,
  messageId: `m-${id}`,
  body: encode(`{"messageId":"m-${id}"}`),
  settings: { endpoints },
  ...fields
})

/** Guards per URL on the test's clock, with the events they emit. */
const guarded = (endpoints: ReadonlyArray<Endpoint>) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const events: Array<GuardEvent> = []
    const gates = new Map<string, EndpointGate>()
    for (const endpoint of endpoints) {
      const guard = new EndpointGuard(endpoint.url, clock, (event) => events.push(event))
      guard.configure(endpoint)
      gates.set(endpoint.url, { permits: new FifoGate(16), guard })
    }
    const guard = (url: string) => gates.get(url)!.guard!
    return { events, guard, first: guard(endpoints[0]!.url), gate: (url: string) => gates.get(url)! }
  })

type Answer = (url: string) => Effect.Effect<TransportResponse, TransportFailure>

const transport = (answer: Answer) => Transport.layerTest((request) => answer(`${request.origin}${request.path}`))

const status = (code: number) => Effect.succeed(Transport.response(code))
const failing = AttemptOutcome.Retryable({ reason: "HTTP 500", status: 500 })

/** Opens the URL's circuit and leaves its probe out (granted, never reported): every other attempt is held. */
const openAndProbing = (guard: EndpointGuard) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10; i++) guard.report(failing, false)
    yield* TestClock.adjust("5 seconds")
    expect(yield* guard.pass(Number.MAX_SAFE_INTEGER)).toBe("probe")
  })

describe("EndpointGuard: circuit breaking (TestClock)", () => {
  it.effect("opens after N failures, holds jobs without attempts, probes at 5 s then 10 s, closes and delivers", () =>
    Effect.gen(function*() {
      const endpoint: Endpoint = { url: A, circuit: { failureThreshold: 3 } }
      const { events, first: guard, gate } = yield* guarded([endpoint])
      let up = false
      const { records, sink } = recorder()
      const options = { recordAttempt: sink, gate }
      const layer = transport(() => status(up ? 200 : 500))
      const first = yield* deliver(job("1", [endpoint]), options).pipe(Effect.provide(layer), Effect.forkChild)
      // Failures at 0, ≈1 s and ≈3 s (jittered backoff): the third opens the circuit.
      yield* TestClock.adjust("4 seconds")
      expect(records.length).toBe(3)
      expect(guard.state).toBe("open")
      const openedAt = records[2]!.startedAt
      expect(events).toMatchObject([{ type: "endpoint.circuit_opened", url: A, at: openedAt }])

      const held = yield* Effect.forEach(
        ["2", "3", "4"],
        (id) => deliver(job(id, [endpoint]), options).pipe(Effect.provide(layer), Effect.forkChild)
      )
      yield* TestClock.setTime(openedAt + 4_999)
      expect(records.length).toBe(3)
      // One probe at opened + 5 s; it fails, the next is 10 s later.
      yield* TestClock.setTime(openedAt + 5_000)
      expect(records.length).toBe(4)
      expect(records[3]!.startedAt).toBe(openedAt + 5_000)
      yield* TestClock.setTime(openedAt + 14_999)
      expect(records.length).toBe(4)
      up = true
      yield* TestClock.setTime(openedAt + 15_000)
      expect(records[4]!.startedAt).toBe(openedAt + 15_000)
      expect(guard.state).toBe("closed")
      expect(events.map((event) => event.type)).toStrictEqual(["endpoint.circuit_opened", "endpoint.recovered"])
      // The held jobs resume at once (the first job's own retry waits for its schedule).
      for (const fiber of held) expect((yield* Fiber.join(fiber))._tag).toBe("Delivered")
      yield* TestClock.adjust("1 minute")
      expect((yield* Fiber.join(first))._tag).toBe("Delivered")
      expect(records.filter((record) => record.outcome === "success").length).toBe(4)
      // Nothing was attempted while the circuit was open but the two probes.
      expect(records.filter((record) => record.startedAt > openedAt && record.startedAt < openedAt + 15_000).length)
        .toBe(1)
    }))

  it.effect("a job held until its 4 h window ends is dead with \"endpoint unavailable\", never attempted", () =>
    Effect.gen(function*() {
      const { first: guard, gate } = yield* guarded([{ url: A }])
      yield* openAndProbing(guard)
      const { records, sink } = recorder()
      const fiber = yield* deliver(job("1", [{ url: A }]), { recordAttempt: sink, gate }).pipe(
        Effect.provide(transport(() => status(200))),
        Effect.forkChild
      )
      yield* TestClock.adjust(4 * hour - 1)
      expect(fiber.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(2)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toContain("endpoint unavailable")
      expect(records).toStrictEqual([])
    }))

  it.effect("a job with two URLs, one open, is delivered through the other at once", () =>
    Effect.gen(function*() {
      const { gate, guard } = yield* guarded([{ url: A }, { url: B }])
      yield* openAndProbing(guard(A))
      const { records, sink } = recorder()
      const result = yield* deliver(job("1", [{ url: A }, { url: B }]), { recordAttempt: sink, gate }).pipe(
        Effect.provide(transport((url) => url === B ? status(200) : Effect.die(new Error("A was attempted"))))
      )
      expect(result).toMatchObject({ _tag: "Delivered", url: B })
      expect(records.map((record) => record.url)).toStrictEqual([B])
    }))
})

describe("EndpointGuard: rate limit (TestClock)", () => {
  it.effect("10 per second over 3 s: 30 attempts, 100 ms apart", () =>
    Effect.gen(function*() {
      const endpoint: Endpoint = { url: A, rateLimit: { perSecond: 10 } }
      const { gate } = yield* guarded([endpoint])
      const { records, sink } = recorder()
      yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => String(i)),
        (id) =>
          deliver(job(id, [endpoint]), { recordAttempt: sink, gate }).pipe(
            Effect.provide(transport(() => status(200))),
            Effect.forkChild
          )
      )
      yield* TestClock.adjust("2999 millis")
      expect(records.length).toBe(30)
      records.forEach((record, i) => expect(record.startedAt).toBe(i * 100))
    }))
})

describe("EndpointGuard: auto-disable (TestClock)", () => {
  it.effect("410 disables at once: later jobs are dead with \"endpoint disabled\", without an attempt", () =>
    Effect.gen(function*() {
      const { events, first: guard, gate } = yield* guarded([{ url: A }])
      const { records, sink } = recorder()
      const layer = transport(() => status(410))
      const first = yield* Effect.exit(
        deliver(job("1", [{ url: A }]), { recordAttempt: sink, gate }).pipe(
          Effect.provide(layer)
        )
      )
      expect(Exit.isFailure(first)).toBe(true)
      expect(guard.state).toBe("disabled")
      expect(events).toMatchObject([{ type: "endpoint.disabled", url: A, reason: "HTTP 410 Gone" }])
      // The reason is the guard's to show until the store's record of it can be read; enabling clears it.
      expect(guard.snapshot().disabledReason).toBe("HTTP 410 Gone")
      guard.enable()
      expect(guard.snapshot().disabledReason).toBeUndefined()
      guard.disable("HTTP 410 Gone")
      const second = yield* Effect.exit(
        deliver(job("2", [{ url: A }]), { recordAttempt: sink, gate }).pipe(
          Effect.provide(layer)
        )
      )
      if (Exit.isFailure(second)) expect(String(second.cause)).toContain("endpoint disabled")
      else expect.unreachable("a disabled endpoint delivered")
      expect(records.length).toBe(1)
    }))

  it.effect("no success for the configured period disables; enabling resets the health", () =>
    Effect.gen(function*() {
      const endpoint: Endpoint = { url: A, circuit: { failureThreshold: 10_000, disableAfterHours: 1 } }
      const { events, first: guard, gate } = yield* guarded([endpoint])
      const fiber = yield* deliver(job("1", [endpoint]), { gate }).pipe(
        Effect.provide(transport(() => status(503))),
        Effect.forkChild
      )
      yield* TestClock.adjust("50 minutes")
      expect(guard.state).toBe("closed")
      yield* TestClock.adjust("30 minutes")
      expect(guard.state).toBe("disabled")
      expect(events).toMatchObject([{ type: "endpoint.disabled", reason: "no success for 1 h" }])
      yield* TestClock.adjust("10 minutes")
      expect(Exit.isFailure(yield* Fiber.await(fiber))).toBe(true)
      guard.enable()
      expect(guard.snapshot()).toMatchObject({ state: "closed", consecutiveFailures: 0, lastFailure: undefined })
    }))
})
