import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Dispatcher from "../../src/delivery/Dispatcher.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import * as Transport from "../../src/delivery/Transport.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox, type OutboxShape } from "../../src/store/Outbox.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import { StoreError } from "../../src/store/StoreError.js"
import { tempDirectory } from "../support/app.js"
import { captureLogs, realWait, startServer, waitUntil } from "./support.js"

/** The dispatcher while the store cannot answer its claims: one log line, polls that back off, no job touched. */

const refused = () =>
  new StoreError({
    operation: "claimDue",
    cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5499"), { code: "ECONNREFUSED" })
  })

/**
 * A SQLite store whose outbox's `override` methods fail while `outage.down`, the transport, signal and outcomes over it, a
 * receiver answering 204, and a source `s1` delivering to it; the dispatcher is started by the test.
 */
const withFlakyStore = (
  override: (outbox: OutboxShape, outage: { down: boolean; calls: number }) => Partial<OutboxShape>
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
    const directory = yield* tempDirectory
    const receiver = yield* startServer((_request, response) => response.writeHead(204).end())
    const outage = { down: false, calls: 0 }
    const flaky = Layer.effect(
      Outbox,
      Effect.map(Outbox, (outbox) => Outbox.of({ ...outbox, ...override(outbox, outage) }))
    )
    const logs = captureLogs()
    const context = yield* Layer.build(
      Layer.mergeAll(Transport.layer(), OutboxSignal.layer, Outcomes.layer, logs.layer).pipe(
        Layer.provideMerge(Layer.provideMerge(flaky, StoreLayers.layerSqlite({ directory })))
      )
    )
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    yield* Effect.flatMap(Sources, (sources) =>
      sources.upsertSource({
        id: "s1",
        writeKey: "key-s1",
        webhooks: { enabled: true, endpoints: [{ url: receiver.url }] }
      }, now)).pipe(Effect.provide(context))
    return { receiver, outage, logs, context, now }
  })

describe("the dispatcher while the store is away", () => {
  it.effect("logs the failed claims once, backs off, and delivers once the store is back", () =>
    Effect.gen(function*() {
      const { context, logs, now, outage, receiver } = yield* withFlakyStore((store, outage) => ({
        claimDue: (...args) => {
          outage.calls += 1
          return outage.down ? Effect.fail(refused()) : store.claimDue(...args)
        }
      }))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        outage.down = true
        yield* Layer.build(Dispatcher.layer())
        yield* realWait(50)
        const before = outage.calls
        // 20 s of polls every 200 ms would be 100 claims; backing off to 2 s, about a dozen.
        for (let step = 0; step < 200; step += 1) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(1)
        }
        const during = outage.calls - before
        expect(during).toBeGreaterThan(5)
        expect(during).toBeLessThan(20)
        const claimLogs = logs.lines.filter((line) => line.message.includes("could not claim due jobs"))
        expect(claimLogs).toHaveLength(1)

        // Back: a job enqueued now is delivered once, with its first attempt.
        outage.down = false
        yield* outbox.enqueue(
          "s1",
          [{ messageId: "m1", body: new TextEncoder().encode("{\"messageId\":\"m1\"}") }],
          now
        )
        for (let step = 0; step < 30 && receiver.requests.length === 0; step += 1) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(20)
        }
        yield* waitUntil(() => receiver.requests.length === 1, "the job delivered")
        // Its outcome is written by the next flush.
        let job = (yield* messageLog.jobsForMessage("m1"))[0]!
        for (let step = 0; step < 50 && job.status !== "delivered"; step += 1) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(20)
          job = (yield* messageLog.jobsForMessage("m1"))[0]!
        }
        expect(job.status).toBe("delivered")
        expect(job.attemptCount).toBe(1)
        expect(receiver.requests).toHaveLength(1)
      }).pipe(Effect.provide(context))
    }))

  it.effect("writes a finished job once the store is back, within its lease: delivered once, not again after it", () =>
    Effect.gen(function*() {
      const { context, logs, now, outage, receiver } = yield* withFlakyStore((store, outage) => ({
        completeMany: (...args) => {
          outage.calls += 1
          return outage.down
            ? Effect.fail(new StoreError({ operation: "completeMany", cause: refused().cause }))
            : store.completeMany(...args)
        }
      }))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* outbox.enqueue(
          "s1",
          [{ messageId: "m1", body: new TextEncoder().encode("{\"messageId\":\"m1\"}") }],
          now
        )
        outage.down = true
        yield* Layer.build(Dispatcher.layer())
        yield* waitUntil(() => receiver.requests.length === 1, "the job delivered")
        // The store stays away for 10 s: the outcome cannot be written.
        for (let step = 0; step < 100; step += 1) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(1)
        }
        expect(outage.calls).toBeGreaterThan(1)
        outage.down = false
        // Past the job's 60 s lease: had its outcome been dropped, the job would be claimed and delivered again.
        for (let step = 0; step < 90; step += 1) {
          yield* TestClock.adjust("1 second")
          yield* realWait(2)
        }
        yield* realWait(200)
        const job = (yield* messageLog.jobsForMessage("m1"))[0]!
        expect(job.status).toBe("delivered")
        expect(job.attemptCount).toBe(1)
        expect(receiver.requests).toHaveLength(1)
        const writeLogs = logs.lines.filter((line) => line.message.includes("could not write finished jobs"))
        expect(writeLogs).toHaveLength(1)
      }).pipe(Effect.provide(context))
    }))
})
