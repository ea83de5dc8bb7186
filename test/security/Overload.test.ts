import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Metric } from "effect"
import { TestClock } from "effect/testing"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import { ingestCommitLatency } from "../../src/metrics/Metrics.js"
import * as EgressPolicy from "../../src/network/EgressPolicy.js"
import * as IngestAdmission from "../../src/overload/IngestAdmission.js"
import { overloadConfig } from "../../src/overload/OverloadConfig.js"
import { Overloaded } from "../../src/overload/Overloaded.js"
import { Relay, RelaySources } from "../../src/relay/Relay.js"
import * as RelayLive from "../../src/relay/RelayLive.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import * as StoreLayers from "../../src/store/Store.js"
import type { StoreServices } from "../../src/store/Store.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { startApp, tempDirectory } from "../support/app.js"
import { withOutbox } from "../support/flakyStore.js"
import { basic } from "../support/http.js"

const writeKey = "wk_overload_tests_1"

/** Lets forked fibers run up to their next wait (TestClock does not move). */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("IngestAdmission", () => {
  it.effect(
    "gives the commit's permit back however it ends, and counts only the jobs a commit created",
    () =>
      Effect.gen(function*() {
        const directory = yield* tempDirectory
        const context = yield* Layer.build(
          IngestAdmission.layer({ maxConcurrentIngests: 1, admissionWait: "1 second" }).pipe(
            Layer.provide(StoreLayers.layerSqlite({ directory }))
          )
        )
        const admission = Context.get(context, IngestAdmission.IngestAdmission)
        const created = (jobsCreated: number) => Effect.succeed({ jobsCreated })

        expect(yield* Effect.flip(admission.admit(Effect.fail("store down")))).toBe("store down")
        expect(Exit.isFailure(yield* Effect.exit(admission.admit(Effect.die(new Error("defect")))))).toBe(true)
        const stuck = yield* Effect.forkChild(admission.admit(Effect.never))
        yield* settle
        yield* Fiber.interrupt(stuck)
        // Each of them gave the one permit back: the next commit is admitted without waiting for the clock.
        const next = yield* Effect.forkChild(admission.admit(created(2)))
        yield* settle
        expect(next.pollUnsafe()).toBeDefined()
        expect(yield* Fiber.join(next)).toEqual({ jobsCreated: 2 })
        expect(yield* admission.estimatedBacklog).toBe(2)
      }),
    // A permit kept by a failed commit would leave the next admission waiting on a TestClock that never moves.
    10_000
  )
})

/**
 * A real SQLite store whose `enqueue` waits at a gate before it starts: a store that is slow to
 * commit. `entered` completes once a commit is waiting at the gate.
 */
const slowStore = (directory: string, gate: Deferred.Deferred<void>, entered: Deferred.Deferred<void>) =>
  withOutbox(StoreLayers.layerSqlite({ directory }), (outbox) => ({
    ...outbox,
    enqueue: (...args: Parameters<typeof outbox.enqueue>) =>
      Deferred.succeed(entered, undefined).pipe(
        Effect.andThen(Deferred.await(gate)),
        Effect.andThen(outbox.enqueue(...args))
      )
  }))

const relayOver = (store: Layer.Layer<StoreServices, unknown>, overload: Parameters<typeof IngestAdmission.layer>[0]) =>
  RelayLive.layer.pipe(
    Layer.provideMerge(IngestAdmission.layer(overload)),
    Layer.provideMerge(
      Layer.mergeAll(OutboxSignal.layer, Outcomes.layer, EgressPolicy.layer({ allowPrivateNetworks: true }))
    ),
    Layer.provideMerge(store)
  )

const track = (messageId: string) => ({ type: "track", userId: "u", event: "E", messageId })

/** A relay over a store gated as `slowStore`'s, with the source "web": its context and its gate. */
const slowRelay = (overload: Parameters<typeof IngestAdmission.layer>[0]) =>
  Effect.gen(function*() {
    const directory = yield* tempDirectory
    const gate = yield* Deferred.make<void>()
    const entered = yield* Deferred.make<void>()
    const context = yield* Layer.build(relayOver(slowStore(directory, gate, entered), overload))
    const relay = Context.get(context, Relay)
    yield* Context.get(context, RelaySources).putSource({
      id: "web",
      writeKey,
      webhooks: { enabled: true, endpoints: [{ url: "https://example.com/h" }] }
    })
    return { context, relay, gate, entered }
  })

describe("ingest commit latency", () => {
  it.effect("hookrelay_ingest_commit_seconds records how long the store took to commit, on the Clock", () =>
    Effect.gen(function*() {
      const { entered, gate, relay } = yield* slowRelay({})
      const before = yield* Metric.value(ingestCommitLatency)

      const committing = yield* Effect.forkChild(relay.ingest("web", [track("timed-1")]))
      yield* Deferred.await(entered)
      yield* TestClock.adjust("1500 millis")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(committing)

      const after = yield* Metric.value(ingestCommitLatency)
      expect(after.count - before.count).toBe(1)
      expect(after.sum - before.sum).toBeCloseTo(1.5, 6)
      // 1.5 s counts under the 2.5 s bound, not under the 1 s one.
      const added = (le: number) =>
        after.buckets.find(([bound]) => bound === le)![1] - before.buckets.find(([bound]) => bound === le)![1]
      expect([added(1), added(2.5)]).toEqual([0, 1])
    }))
})

describe("ingest admission: a slow store", () => {
  it.effect("refuses with Overloaded after the admission wait, and the slow commit still lands in full", () =>
    Effect.gen(function*() {
      const { context, entered, gate, relay } = yield* slowRelay({
        maxConcurrentIngests: 1,
        admissionWait: "2 seconds"
      })
      const messageLog = Context.get(context, MessageLog)

      const first = yield* Effect.forkChild(relay.ingest("web", [track("slow-1")]))
      yield* Deferred.await(entered)
      const second = yield* Effect.forkChild(relay.ingest("web", [track("refused-1")]))
      yield* settle
      yield* TestClock.adjust("1999 millis")
      expect(second.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      const refused = yield* Fiber.join(second).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(Overloaded)
      expect(refused).toMatchObject({ _tag: "Overloaded", reason: "busy", retryAfterSeconds: 2 })

      // The commit that holds the slot is never cut, however long the store takes.
      yield* TestClock.adjust("30 seconds")
      expect(first.pollUnsafe()).toBeUndefined()
      yield* Deferred.succeed(gate, undefined)
      const committed = yield* Fiber.join(first)
      expect(committed).toMatchObject({ accepted: 1, jobs: 1, messageIds: ["slow-1"] })

      // Nothing of the refused request was written; the slot is free again.
      expect(yield* messageLog.jobsForMessage("refused-1")).toHaveLength(0)
      expect(yield* messageLog.jobsForMessage("slow-1")).toHaveLength(1)
      const again = yield* relay.ingest("web", [track("refused-1")])
      expect(again).toMatchObject({ accepted: 1, duplicates: 0, jobs: 1 })
    }))

  it.live("over HTTP: 503 with Retry-After and a JSON error body, nothing stored", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const gate = yield* Deferred.make<void>()
      const entered = yield* Deferred.make<void>()
      const app = yield* startApp({
        dispatch: false,
        store: slowStore(directory, gate, entered),
        overload: { maxConcurrentIngests: 1, admissionWait: "200 millis" }
      })
      yield* app.relaySources.putSource({
        id: "web",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: "https://example.com/h" }] }
      })
      const post = (messageId: string) =>
        Effect.promise(async () => {
          const response = await fetch(`${app.baseUrl}/v1/track`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: basic(writeKey) },
            body: JSON.stringify({ userId: "u", event: "E", messageId })
          })
          return {
            status: response.status,
            retryAfter: response.headers.get("retry-after"),
            body: (await response.json()) as { readonly message?: string }
          }
        })
      const first = yield* Effect.forkChild(post("http-slow-1"))
      yield* Deferred.await(entered)
      const refused = yield* post("http-refused-1")
      expect(refused.status).toBe(503)
      expect(refused.retryAfter).toBe("1")
      expect(refused.body).toMatchObject({ success: false, code: "overloaded" })
      expect(refused.body.message).toMatch(/nothing was stored/)
      yield* Deferred.succeed(gate, undefined)
      expect((yield* Fiber.join(first)).status).toBe(200)
      expect(yield* app.messageLog.jobsForMessage("http-refused-1")).toHaveLength(0)
    }))
})

describe("ingest admission: the backlog bound (real SQLite store)", () => {
  it.effect("counts once per refresh period on the Clock, not once per request", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      let counts = 0
      const counting = withOutbox(StoreLayers.layerSqlite({ directory }), (outbox) => ({
        ...outbox,
        backlog: () => Effect.andThen(Effect.sync(() => counts++), outbox.backlog())
      }))
      const context = yield* Layer.build(relayOver(counting, { maxBacklog: 10, backlogRefresh: "5 seconds" }))
      const relay = Context.get(context, Relay)
      const relaySources = Context.get(context, RelaySources)
      yield* relaySources.putSource({
        id: "web",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: "https://example.com/h" }] }
      })
      expect(counts).toBe(1)
      for (let i = 0; i < 10; i++) yield* relay.ingest("web", [track(`c-${i}`)])
      for (let i = 0; i < 20; i++) {
        expect(yield* relay.ingest("web", [track("c-over")]).pipe(Effect.flip)).toMatchObject({ reason: "backlog" })
      }
      expect(counts).toBe(1)
      yield* TestClock.adjust("5 seconds")
      expect(counts).toBe(2)
      // The recount finds the 10 jobs on disk: still over the bound.
      expect(yield* relay.ingest("web", [track("c-over")]).pipe(Effect.flip)).toMatchObject({ reason: "backlog" })
    }))

  it.live("refuses past the bound without a query per request, and accepts again once delivered", () =>
    Effect.gen(function*() {
      let healthy = false
      const receiver = yield* startServer((_request, response) => response.writeHead(healthy ? 200 : 500).end())
      const directory = yield* tempDirectory
      const overload = { maxBacklog: 5, backlogRefresh: Duration.millis(100) }
      const app = yield* startApp({
        store: StoreLayers.layerSqlite({ directory }),
        overload
      })
      yield* app.relaySources.putSource({
        id: "web",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: receiver.url }] }
      })
      const post = (messageIds: ReadonlyArray<string>) =>
        Effect.promise(async () => {
          const response = await fetch(`${app.baseUrl}/v1/batch`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: basic(writeKey) },
            body: JSON.stringify({ batch: messageIds.map((messageId) => ({ ...track(messageId) })) })
          })
          return {
            status: response.status,
            retryAfter: response.headers.get("retry-after"),
            body: (await response.json()) as { readonly message?: string }
          }
        })

      expect((yield* post(["b1", "b2", "b3", "b4", "b5"])).status).toBe(200)
      // At once, before any recount: the jobs this process created count against the bound.
      const refused = yield* post(["b6"])
      expect(refused).toMatchObject({ status: 503, retryAfter: "1", body: { success: false, code: "overloaded" } })
      expect(yield* app.messageLog.jobsForMessage("b6")).toHaveLength(0)
      // The library answers the same, typed.
      const typed = yield* app.relay.ingest("web", [track("b6")]).pipe(Effect.flip)
      expect(typed).toMatchObject({ _tag: "Overloaded", reason: "backlog" })

      // Still refused after recounts: the receiver fails, so the jobs stay in the outbox.
      yield* Effect.sleep("300 millis")
      expect((yield* post(["b6"])).status).toBe(503)

      // Delivered (on the first retries): the next count sees an empty backlog.
      yield* waitUntil(() => receiver.requests.length >= 5, "every job was attempted once", 10_000)
      healthy = true
      yield* Effect.gen(function*() {
        for (let tries = 0; tries < 200; tries++) {
          const backlog = yield* app.outbox.backlog()
          if (backlog.pending + backlog.delivering === 0) return
          yield* Effect.sleep("100 millis")
        }
        return yield* Effect.die(new Error("the backlog never drained"))
      })
      // The next recount lets it in: polled, since the recount runs on the live clock.
      let status = 503
      for (let tries = 0; tries < 100 && status === 503; tries++) {
        status = (yield* post(["b6"])).status
        if (status === 503) yield* Effect.sleep("100 millis")
      }
      expect(status).toBe(200)
    }))

  it.live("a restarted engine counts the backlog left on disk before its first request", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const store = StoreLayers.layerSqlite({ directory })
      yield* Effect.scoped(Effect.gen(function*() {
        const app = yield* startApp({ dispatch: false, store })
        yield* app.relaySources.putSource({
          id: "web",
          writeKey,
          webhooks: { enabled: true, endpoints: [{ url: "https://example.com/h" }] }
        })
        yield* app.relay.ingest("web", [1, 2, 3].map((i) => track(`left-${i}`)))
      }))
      const app = yield* startApp({ dispatch: false, store, overload: { maxBacklog: 3 } })
      const refused = yield* app.relay.ingest("web", [track("next")]).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "Overloaded", reason: "backlog", retryAfterSeconds: 5 })
    }))
})

describe("overload configuration", () => {
  const read = (env: Record<string, string>) =>
    Effect.provideService(overloadConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))

  it.effect("defaults: 1 000 000 jobs, 32 concurrent commits, a 2 s wait", () =>
    Effect.gen(function*() {
      const config = yield* read({})
      expect(config.maxBacklog).toBe(1_000_000)
      expect(config.maxConcurrentIngests).toBe(32)
      expect(Duration.toMillis(config.admissionWait!)).toBe(2000)
    }))

  it.effect("reads HOOKRELAY_MAX_BACKLOG, HOOKRELAY_INGEST_CONCURRENCY and HOOKRELAY_INGEST_WAIT", () =>
    Effect.gen(function*() {
      const config = yield* read({
        HOOKRELAY_MAX_BACKLOG: "5000",
        HOOKRELAY_INGEST_CONCURRENCY: "4",
        HOOKRELAY_INGEST_WAIT: "500 millis"
      })
      expect(config).toMatchObject({ maxBacklog: 5000, maxConcurrentIngests: 4 })
      expect(Duration.toMillis(config.admissionWait!)).toBe(500)
      expect(Duration.toMillis((yield* read({ HOOKRELAY_INGEST_WAIT: "1500" })).admissionWait!)).toBe(1500)
    }))

  it.effect("refuses a bound that is not a positive whole number, naming the variable", () =>
    Effect.gen(function*() {
      for (
        const env of [
          { HOOKRELAY_MAX_BACKLOG: "0" },
          { HOOKRELAY_MAX_BACKLOG: "lots" },
          { HOOKRELAY_INGEST_CONCURRENCY: "-1" },
          { HOOKRELAY_INGEST_WAIT: "0" },
          { HOOKRELAY_INGEST_WAIT: "soon" }
        ]
      ) {
        const exit = yield* Effect.exit(read(env))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(String(Exit.isFailure(exit) ? exit.cause : "")).toContain(Object.keys(env)[0]!)
      }
    }))
})
