import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Stream } from "effect"
import { TestClock } from "effect/testing"
import type * as http from "node:http"
import * as Dispatcher from "../../src/delivery/Dispatcher.js"
import { DeliveryOutcomes } from "../../src/delivery/Outcomes.js"
import * as Outcomes from "../../src/delivery/Outcomes.js"
import * as Transport from "../../src/delivery/Transport.js"
import { deliveredBody, encodeBody } from "../../src/domain/DeliveredBody.js"
import type { Endpoint } from "../../src/domain/Settings.js"
import { stampMessage } from "../../src/domain/Stamp.js"
import { IngestPressure } from "../../src/overload/IngestPressure.js"
import * as IngestPressures from "../../src/overload/IngestPressure.js"
import { MessageLog } from "../../src/store/MessageLog.js"
import { Outbox } from "../../src/store/Outbox.js"
import * as OutboxSignal from "../../src/store/OutboxSignal.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import { commitEvery10Millis, scriptedLoop } from "../overload/support.js"
import { tempDirectory } from "../support/app.js"
import { pollUntil } from "../support/http.js"
import { adjustUntil, closedPort, realWait, startServer, waitUntil } from "./support.js"

const hour = 60 * 60 * 1000
const minute = 60 * 1000

const bodyFor = (messageId: string, now: number) =>
  encodeBody(deliveredBody(stampMessage(
    { type: "track", userId: "u", event: "E", messageId },
    { receivedAt: now, generatedMessageId: messageId }
  )))

/** A store on a fresh SQLite file plus what the dispatcher needs, without the dispatcher. */
const baseLayer = (directory: string) =>
  Layer.mergeAll(Transport.layer(), OutboxSignal.layer, Outcomes.layer).pipe(
    Layer.provideMerge(StoreLayers.layerSqlite({ directory }))
  )

const enqueue = (sourceId: string, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const outbox = yield* Outbox
    const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
    for (let start = 0; start < ids.length; start += 1000) {
      const chunk = ids.slice(start, start + 1000)
      yield* outbox.enqueue(sourceId, chunk.map((id) => ({ messageId: id, body: bodyFor(id, now) })), now)
    }
  })

const source = (id: string, url: string, settings: Omit<Endpoint, "url"> = {}) =>
  Effect.flatMap(Sources, (sources) =>
    Effect.flatMap(
      Effect.clockWith((clock) => clock.currentTimeMillis),
      (now) =>
        sources.upsertSource(
          { id, writeKey: `key-${id}`, webhooks: { enabled: true, endpoints: [{ url, ...settings }] } },
          now
        )
    ))

/** The outbox in context with the limit of each claim recorded. */
const recordingClaims = (limits: Array<number>) =>
  Layer.effect(
    Outbox,
    Effect.map(Outbox, (outbox) =>
      Outbox.of({
        ...outbox,
        claimDue: (owner, now, limit, leaseMs, options) => {
          limits.push(limit)
          return outbox.claimDue(owner, now, limit, leaseMs, options)
        }
      }))
  )

/** A store on a fresh SQLite file and a scripted transport: `answer` gives each request's response. */
const scriptedLayer = (
  directory: string,
  answer: (request: Transport.TransportRequest) => Effect.Effect<Transport.TransportResponse>
) =>
  Layer.mergeAll(Transport.layerTest(answer), OutboxSignal.layer, Outcomes.layer).pipe(
    Layer.provideMerge(StoreLayers.layerSqlite({ directory }))
  )

/** Small mailboxes (16, 64 for a quick source) and 4 requests at a time: a few hundred jobs show a mailbox grow. */
const smallMailboxes: Dispatcher.DispatcherOptions = {
  mailboxPerSource: 16,
  mailboxPerQuickSource: 64,
  claimBatch: 64,
  concurrencyPerEndpoint: 4
}

/** An answer after 5 ms of Clock: with 4 at a time, the mailbox is mid-way when the claimer looks again. */
const answerSoon = Effect.as(Effect.sleep("5 millis"), Transport.response(204))

/**
 * `count` due jobs of a new source, and a dispatcher with `smallMailboxes` whose claims' limits go to `limits`; returns
 * the running dispatcher (its `held` jobs are those in memory).
 */
const dispatchSmall = (
  sourceId: string,
  count: number,
  limits: Array<number>,
  settings: Omit<Endpoint, "url"> = {}
) =>
  Effect.gen(function*() {
    yield* source(sourceId, `https://${sourceId}.example/hook`, settings)
    yield* enqueue(sourceId, ids(sourceId, count))
    return yield* Dispatcher.start(smallMailboxes).pipe(Effect.provide(recordingClaims(limits)))
  })

/**
 * Answers the first 200 requests within 5 ms of Clock (the source's mailbox grows), then with `then`; `switchedAt()`
 * is how many claims had been made when it switched (-1 before).
 */
const quickThen = (
  limits: ReadonlyArray<number>,
  then: (request: Transport.TransportRequest) => Effect.Effect<Transport.TransportResponse>
) => {
  let posts = 0
  let switchedAt = -1
  return {
    answer: (request: Transport.TransportRequest) =>
      Effect.suspend(() => {
        posts++
        if (posts <= 200) return answerSoon
        if (switchedAt < 0) switchedAt = limits.length
        return then(request)
      }),
    switchedAt: () => switchedAt
  }
}

/** Advances Clock 5 ms at a time until `script` switched to its second answer. */
const untilSwitched = (script: ReturnType<typeof quickThen>) =>
  Effect.gen(function*() {
    for (let step = 0; step < 400 && script.switchedAt() < 0; step++) {
      yield* TestClock.adjust("5 millis")
      yield* realWait(1)
    }
    expect(script.switchedAt()).toBeGreaterThan(0)
  })

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`)

describe("Dispatcher", () => {
  it.live("delivers what is due, records the attempts and reports the outcomes", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const receiver = yield* startServer((_request, response) => response.writeHead(204).end())
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        yield* source("s1", `${receiver.url}/hook`)
        const outcomes = yield* DeliveryOutcomes
        const seen: Array<string> = []
        yield* outcomes.stream.pipe(
          Stream.runForEach((outcome) => Effect.sync(() => seen.push(outcome.status))),
          Effect.forkScoped
        )
        yield* Effect.sleep("10 millis")
        yield* Layer.build(Dispatcher.layer())
        yield* enqueue("s1", Array.from({ length: 50 }, (_, i) => `m-${i}`))
        yield* waitUntil(() => receiver.requests.length === 50, "50 deliveries")
        const messageLog = yield* MessageLog
        yield* waitUntil(() => seen.length === 50, "50 outcomes")
        expect(seen.every((status) => status === "delivered")).toBe(true)
        yield* Effect.sleep("100 millis")
        const [job] = yield* messageLog.jobsForMessage("m-7")
        expect(job).toMatchObject({ status: "delivered", attemptCount: 1 })
        expect(job!.attempts).toMatchObject([{ url: `${receiver.url}/hook`, statusCode: 204, outcome: "success" }])
      }).pipe(Effect.provide(context))
    }))

  it.live("keeps a fast endpoint fast while another holds every request open", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      // The slow endpoint answers nothing until the fast source is done: no race against a wall-clock bound.
      const open: Array<http.ServerResponse> = []
      let mostOpen = 0
      const slow = yield* startServer((_request, response) => {
        open.push(response)
        mostOpen = Math.max(mostOpen, open.filter((held) => !held.destroyed && !held.writableFinished).length)
      })
      const fast = yield* startServer((_request, response) => response.writeHead(200).end())
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        yield* source("slow", slow.url)
        yield* source("fast", fast.url)
        // The slow source's jobs are older: a FIFO dispatcher would serve them first.
        yield* enqueue("slow", Array.from({ length: 600 }, (_, i) => `slow-${i}`))
        yield* enqueue("fast", Array.from({ length: 600 }, (_, i) => `fast-${i}`))
        yield* Layer.build(Dispatcher.layer({ maxJobsInMemory: 512, mailboxPerSource: 64 }))
        yield* waitUntil(() => fast.requests.length === 600, "600 fast deliveries", 20_000)
        // Every fast job done before the first slow attempt reached its deadline (its request still open): the slow
        // endpoint held its own slots only.
        expect(open.every((held) => !held.destroyed)).toBe(true)
        expect(mostOpen).toBeLessThanOrEqual(16)
        expect(mostOpen).toBeGreaterThan(0)
        for (const held of open) if (!held.destroyed) held.writeHead(200).end()
      }).pipe(Effect.provide(context))
    }), 30_000)

  it.effect("resumes the 4 h window across restarts: 3 h 59 m ago gets one attempt, 4 h 01 m none", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const directory = yield* tempDirectory
      const receiver = yield* startServer((_request, response) => response.writeHead(500).end())
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* source("s1", receiver.url)
        yield* enqueue("s1", ["inside", "outside"])
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        // A process that died long ago had started both jobs' windows.
        const claimed = yield* outbox.claimDue("old-process", now, 10, 60_000)
        const started = { inside: now - (3 * hour + 59 * minute), outside: now - (4 * hour + 1 * minute) }
        yield* outbox.completeMany(
          "old-process",
          claimed.map((job) => ({
            _tag: "Retry" as const,
            jobId: job.id,
            nextDueAt: now,
            firstAttemptAt: started[job.messageId as "inside" | "outside"],
            endpointState: [{ tag: "pending", url: receiver.url, attempts: 12, nextAttemptAt: now }],
            lastError: "HTTP 500"
          }))
        )
        yield* Layer.build(Dispatcher.layer())
        yield* waitUntil(() => receiver.requests.length >= 1, "one attempt")
        // The answer comes in real time; finished jobs are written every 20 ms of Clock time after it.
        const jobs = Effect.map(
          Effect.all([messageLog.jobsForMessage("inside"), messageLog.jobsForMessage("outside")]),
          ([[inside], [outside]]) => ({ inside, outside })
        )
        let { inside, outside } = yield* jobs
        for (let step = 0; step < 200 && (inside?.status !== "dead" || outside?.status !== "dead"); step++) {
          yield* TestClock.adjust("10 millis")
          yield* realWait(2)
          ;({ inside, outside } = yield* jobs)
        }
        // Dead in the store after its one attempt: the job inside the window is not tried again.
        expect(receiver.requests).toHaveLength(1)
        expect(inside).toMatchObject({ status: "dead", attemptCount: 1 })
        expect(outside).toMatchObject({ status: "dead", attemptCount: 0 })
        expect(outside!.attempts).toStrictEqual([])
      }).pipe(Effect.provide(context))
    }))

  it.effect("retries a job in memory through its endpoint's mailbox: 500, 503, then 204 is one delivery of 3 attempts", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const directory = yield* tempDirectory
      const statuses = [500, 503, 204]
      const receiver = yield* startServer((_request, response, index) =>
        response.writeHead(statuses[Math.min(index, 2)]!).end()
      )
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const messageLog = yield* MessageLog
        yield* source("s1", `${receiver.url}/hook`)
        yield* enqueue("s1", ["flaky"])
        yield* Layer.build(Dispatcher.layer())
        yield* waitUntil(() => receiver.requests.length === 1, "the first attempt")
        // The retries wait on the Clock (1 s, then 2 s, jittered), not in a worker: nothing happens until it moves.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
        expect(receiver.requests).toHaveLength(1)
        yield* adjustUntil(() => receiver.requests.length === 3, "the third attempt")
        // Finished jobs are written every 20 ms of Clock time.
        let job = (yield* messageLog.jobsForMessage("flaky"))[0]
        for (let step = 0; step < 100 && job?.status !== "delivered"; step++) {
          yield* TestClock.adjust("10 millis")
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
          job = (yield* messageLog.jobsForMessage("flaky"))[0]
        }
        expect(job).toMatchObject({ status: "delivered", attemptCount: 3 })
        expect(job!.attempts.map((attempt) => [attempt.statusCode, attempt.outcome])).toStrictEqual([
          [500, "retryable"],
          [503, "retryable"],
          [204, "success"]
        ])
        expect(receiver.requests).toHaveLength(3)
      }).pipe(Effect.provide(context))
    }))

  it.live(
    "never has more than concurrencyPerEndpoint requests in flight to one URL, and uses all of them",
    () =>
      Effect.gen(function*() {
        const directory = yield* tempDirectory
        let inFlight = 0
        let most = 0
        const receiver = yield* startServer((_request, response) => {
          inFlight += 1
          most = Math.max(most, inFlight)
          setTimeout(() => {
            inFlight -= 1
            response.writeHead(204).end()
          }, 20)
        })
        const context = yield* Layer.build(baseLayer(directory))
        yield* Effect.gen(function*() {
          yield* source("s1", receiver.url)
          yield* enqueue("s1", Array.from({ length: 300 }, (_, i) => `c-${i}`))
          yield* Layer.build(Dispatcher.layer({ concurrencyPerEndpoint: 5 }))
          yield* waitUntil(() => receiver.requests.length === 300, "300 deliveries", 20_000)
          expect(most).toBe(5)
        }).pipe(Effect.provide(context))
      }),
    30_000
  )

  it.live("releases its leases on shutdown so that a restart delivers them", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const port = yield* closedPort
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* source("s1", `http://127.0.0.1:${port}/down`)
        yield* enqueue("s1", Array.from({ length: 20 }, (_, i) => `r-${i}`))
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(Dispatcher.layer())
          // Every job claimed, and the first, refused, attempts recorded: the dispatcher holds them all.
          yield* pollUntil(
            Effect.zip(outbox.backlog(), messageLog.jobsForMessage("r-19")),
            ([backlog, [job]]) => backlog.delivering === 20 && (job?.attempts.length ?? 0) >= 1,
            "every job claimed and attempted"
          )
        }))
        const backlog = yield* outbox.backlog()
        expect(backlog).toMatchObject({ delivering: 0, pending: 20 })
      }).pipe(Effect.provide(context))
    }))

  it.live("stops a job whose lease another dispatcher took over, aborting its request", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const receiver = yield* startServer(() => {
        // Never answers: the request stays in flight until the dispatcher gives it up.
      })
      // A store whose renewals report every lease lost, as after a takeover.
      const losingRenewals = Layer.effectContext(
        Effect.map(Effect.context<StoreLayers.StoreServices>(), (store) =>
          Context.add(store, Outbox, {
            ...Context.get(store, Outbox),
            renewLeases: () => Effect.succeed([] as ReadonlyArray<string>)
          }))
      ).pipe(Layer.provide(StoreLayers.layerSqlite({ directory })))
      const context = yield* Layer.build(
        Layer.mergeAll(Transport.layer(), OutboxSignal.layer, Outcomes.layer).pipe(Layer.provideMerge(losingRenewals))
      )
      yield* Effect.gen(function*() {
        yield* source("s1", receiver.url)
        yield* enqueue("s1", ["taken-over"])
        yield* Layer.build(Dispatcher.layer({ lease: "600 millis" }))
        yield* waitUntil(() => receiver.requests.length === 1 || receiver.handlerCalls === 1, "the request in flight")
        yield* waitUntil(() => receiver.requests[0]?.aborted === true, "the request aborted", 5_000)
      }).pipe(Effect.provide(context))
    }))

  it.effect("writes finished jobs as soon as flushSize of them wait, without waiting for flushDelay", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const directory = yield* tempDirectory
      const receiver = yield* startServer((_request, response) => response.writeHead(204).end())
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* source("s1", receiver.url)
        yield* enqueue("s1", Array.from({ length: 25 }, (_, i) => `f-${i}`))
        // The Clock never moves here: only the size can trigger a write.
        yield* Layer.build(Dispatcher.layer({ flushDelay: "2 seconds", flushSize: 10 }))
        yield* waitUntil(() => receiver.requests.length === 25, "25 deliveries")
        // Polls the store (real time, at most 2 s) until `count` jobs are written as delivered.
        const writtenDelivered = (count: number) =>
          Effect.gen(function*() {
            let delivered = (yield* outbox.backlog()).delivered
            for (let waited = 0; waited < 2_000 && delivered < count; waited += 10) {
              yield* realWait(10)
              delivered = (yield* outbox.backlog()).delivered
            }
            return delivered
          })
        // Fewer than flushSize wait for the Clock: at least 16 of the 25 were written by size.
        expect(yield* writtenDelivered(16)).toBeGreaterThanOrEqual(16)
        yield* TestClock.adjust("2 seconds")
        expect(yield* writtenDelivered(25)).toBe(25)
      }).pipe(Effect.provide(context))
    }))

  it.effect("looks for expired leases once a second, not on every claim", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const directory = yield* tempDirectory
      const receiver = yield* startServer((_request, response) => response.writeHead(204).end())
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* source("s1", receiver.url)
        yield* Layer.build(Dispatcher.layer())
        // The first claim (expired leases included) finds nothing; the dispatcher then polls every 200 ms.
        yield* realWait(100)
        yield* enqueue("s1", ["orphan"])
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        // Another process claims it for 300 ms and stops.
        expect(yield* outbox.claimDue("stopped-process", now, 10, 300)).toHaveLength(1)
        // Expired at +300 ms; claims at +200 … +800 take pending jobs only.
        for (let step = 0; step < 9; step++) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(20)
        }
        expect(receiver.handlerCalls).toBe(0)
        // At +1 s the expired leases are looked for again: taken over and delivered.
        yield* adjustUntil(() => receiver.requests.length === 1, "the orphan delivered", "100 millis", 5)
        expect(receiver.requests[0]!.body.toString()).toContain("orphan")
      }).pipe(Effect.provide(context))
    }))

  it.effect("holds its claims back while ingest saturates the process, at most maxIngestYield, and goes on once it eases", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-21T12:00:00.000Z"))
      const directory = yield* tempDirectory
      const receiver = yield* startServer((_request, response) => response.writeHead(204).end())
      const { loop, loopTimes } = scriptedLoop()
      loop.busy = 1
      const context = yield* Layer.build(
        Layer.merge(baseLayer(directory), IngestPressures.layer({ loopTimes }))
      )
      yield* Effect.gen(function*() {
        const pressure = yield* IngestPressure
        const ingestFor = (millis: number) => commitEvery10Millis(pressure, millis / 10, realWait(2))
        yield* source("s1", receiver.url)
        yield* enqueue("s1", ["held-1"])
        yield* ingestFor(50)
        expect(yield* pressure.saturated).toBe(true)
        yield* Layer.build(Dispatcher.layer({ maxIngestYield: "300 millis" }))
        yield* ingestFor(280)
        expect(receiver.handlerCalls).toBe(0)
        // However long ingest stays saturated, one claim goes out after 300 ms.
        yield* ingestFor(20)
        yield* waitUntil(() => receiver.requests.length === 1, "the first job delivered after the longest hold")

        // The claimer finds nothing else and polls again 200 ms later; the saturation holds it back again from there.
        yield* enqueue("s1", ["held-2"])
        yield* ingestFor(250)
        expect(receiver.requests).toHaveLength(1)
        // The event loop gets room (ingest still committing): the next sample (≤ 50 ms) lets the claim go, long before
        // the 300 ms hold would have ended.
        loop.busy = 0.5
        for (let step = 0; step < 8 && receiver.requests.length < 2; step++) {
          yield* pressure.ingesting(Effect.void)
          yield* TestClock.adjust("10 millis")
          yield* realWait(10)
        }
        expect(receiver.requests).toHaveLength(2)
        expect(receiver.requests[1]!.body.toString()).toContain("held-2")
      }).pipe(Effect.provide(context))
    }))

  it.live("aborts a request in flight at shutdown: recorded as aborted, the job pending again", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const receiver = yield* startServer(() => {
        // Never answers: the attempt is in flight when the dispatcher stops.
      })
      const context = yield* Layer.build(baseLayer(directory))
      yield* Effect.gen(function*() {
        const messageLog = yield* MessageLog
        yield* source("s1", receiver.url)
        yield* enqueue("s1", ["in-flight"])
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(Dispatcher.layer())
          yield* waitUntil(() => receiver.requests.length === 1, "the request in flight")
        }))
        yield* waitUntil(() => receiver.requests[0]!.aborted, "the receiver saw the request aborted")
        const [job] = yield* messageLog.jobsForMessage("in-flight")
        expect(job).toMatchObject({ status: "pending", attemptCount: 1, leaseOwner: null })
        expect(job!.attempts).toMatchObject([{ attempt: 1, outcome: "aborted", statusCode: null }])
      }).pipe(Effect.provide(context))
    }))

  it.effect("runs a transport without start (a scripted one) through post, on the layer's Clock", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const posted: Array<string> = []
      // Answers 200 three seconds (of TestClock) after each request.
      const scripted = Transport.layerTest((request) =>
        Effect.as(
          Effect.andThen(
            Effect.sync(() => posted.push(new TextDecoder().decode(request.body))),
            Effect.sleep("3 seconds")
          ),
          Transport.response(200)
        )
      )
      const context = yield* Layer.build(
        Layer.mergeAll(scripted, OutboxSignal.layer, Outcomes.layer).pipe(
          Layer.provideMerge(StoreLayers.layerSqlite({ directory }))
        )
      )
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const messageLog = yield* MessageLog
        yield* source("s1", "https://receiver.example/hook")
        yield* enqueue("s1", ["scripted-1", "scripted-2"])
        yield* Layer.build(Dispatcher.layer())
        yield* waitUntil(() => posted.length === 2, "both requests posted")
        yield* TestClock.adjust("2999 millis")
        yield* realWait(20)
        expect((yield* outbox.backlog()).delivered).toBe(0)
        // The answers at 3 s; the finished jobs are written 20 ms of Clock later.
        for (let step = 0; step < 50; step++) {
          if ((yield* outbox.backlog()).delivered === 2) break
          yield* TestClock.adjust("10 millis")
          yield* realWait(5)
        }
        expect(yield* outbox.backlog()).toMatchObject({ delivered: 2, pending: 0, delivering: 0 })
        const [job] = yield* messageLog.jobsForMessage("scripted-1")
        expect(job!.attempts).toMatchObject([{ attempt: 1, outcome: "success", statusCode: 200, durationMs: 3000 }])
      }).pipe(Effect.provide(context))
    }))

  it.effect("claims more at a time for a source whose endpoint answers within 50 ms, once it has shown it", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const limits: Array<number> = []
      const context = yield* Layer.build(scriptedLayer(directory, () => answerSoon))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* dispatchSmall("quick", 400, limits)
        for (let step = 0; step < 2000 && (yield* outbox.backlog()).delivered < 400; step++) {
          yield* TestClock.adjust("5 millis")
          yield* realWait(1)
        }
        expect(yield* outbox.backlog()).toMatchObject({ delivered: 400, pending: 0, delivering: 0 })
        // A source not seen yet gets its base mailbox (16); after 16 quick deliveries in a row, 64.
        expect(limits[0]).toBe(16)
        expect(Math.max(...limits)).toBeGreaterThan(16)
        expect(Math.max(...limits)).toBeLessThanOrEqual(64)
        expect(limits.filter((limit) => limit > 16).length).toBeGreaterThanOrEqual(3)
      }).pipe(Effect.provide(context))
    }))

  it.effect("puts a source back to its base mailbox when its endpoint starts failing, handing back what it had not tried", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const limits: Array<number> = []
      const triedSinceFailing = new Set<string>()
      const script = quickThen(limits, (request) =>
        Effect.sync(() => {
          triedSinceFailing.add(JSON.parse(new TextDecoder().decode(request.body)).messageId)
          return Transport.response(500)
        }))
      const context = yield* Layer.build(scriptedLayer(directory, script.answer))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        const dispatcher = yield* dispatchSmall("flapping", 1000, limits)
        yield* untilSwitched(script)
        const limitsBeforeFailing = script.switchedAt()
        expect(Math.max(...limits.slice(0, limitsBeforeFailing))).toBeGreaterThan(16)
        // At the first failure it held up to 64 jobs; those beyond 16 that no attempt had touched went back to the
        // store at once: within the next 800 ms of Clock (before any in-memory retry is due) no more than 16 are
        // held in memory, and only what it kept (and what was in flight) was tried. (The store's count of leased jobs
        // can pass 16 for a moment: a job that failed leaves memory before its completion is written, flushDelay later,
        // and a claim may bring the next one first.)
        for (let step = 0; step < 8; step++) {
          yield* TestClock.adjust("100 millis")
          yield* realWait(5)
          expect(dispatcher.held.size).toBeLessThanOrEqual(16)
        }
        expect(triedSinceFailing.size).toBeLessThanOrEqual(16)
        // From then on its claims fit its base mailbox, and no job is lost on the way.
        let mostHeld = 0
        for (let step = 0; step < 300 && (step < 100 || limits.length <= limitsBeforeFailing + 1); step++) {
          yield* TestClock.adjust("200 millis")
          yield* realWait(2)
          mostHeld = Math.max(mostHeld, dispatcher.held.size)
        }
        const afterwards = limits.slice(limitsBeforeFailing + 1)
        expect(afterwards.length).toBeGreaterThan(0)
        expect(Math.max(...afterwards)).toBeLessThanOrEqual(16)
        expect(mostHeld).toBeLessThanOrEqual(16)
        const backlog = yield* outbox.backlog()
        expect(backlog.pending + backlog.delivering + backlog.delivered + backlog.dead).toBe(1000)
        expect(backlog.delivered).toBeGreaterThanOrEqual(200 - 4)
      }).pipe(Effect.provide(context))
    }))

  it.effect("shrinks the mailbox of a source whose endpoint slows down, but lets the jobs it holds drain", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const limits: Array<number> = []
      const script = quickThen(limits, () => Effect.as(Effect.sleep("60 millis"), Transport.response(204)))
      const context = yield* Layer.build(scriptedLayer(directory, script.answer))
      yield* Effect.gen(function*() {
        const outbox = yield* Outbox
        yield* dispatchSmall("slowing", 400, limits)
        yield* untilSwitched(script)
        const slowSince = script.switchedAt()
        // The first slow answer (60 ms) shrinks the bound to 16; what the source held beyond it stays leased and is
        // delivered in turn, not handed back.
        for (let step = 0; step < 7; step++) {
          yield* TestClock.adjust("10 millis")
          yield* realWait(5)
        }
        expect((yield* outbox.backlog()).delivering).toBeGreaterThan(16)
        for (let step = 0; step < 2000 && (yield* outbox.backlog()).delivered < 400; step++) {
          yield* TestClock.adjust("20 millis")
          yield* realWait(1)
        }
        expect(yield* outbox.backlog()).toMatchObject({ delivered: 400, pending: 0, delivering: 0 })
        expect(Math.max(...limits.slice(slowSince + 1))).toBeLessThanOrEqual(16)
      }).pipe(Effect.provide(context))
    }))

  it.effect("keeps a source whose endpoint fails at its base mailbox: no more of its jobs in memory than that", () =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const limits: Array<number> = []
      let posts = 0
      const context = yield* Layer.build(scriptedLayer(directory, () =>
        Effect.sync(() => {
          posts++
          return Transport.response(500)
        })))
      yield* Effect.gen(function*() {
        // The circuit would hold the jobs after 10 failures: this is about the mailbox under failures that go on.
        const dispatcher = yield* dispatchSmall("failing", 400, limits, { circuit: { failureThreshold: 10_000 } })
        // Until 64 attempts (at least 12 s of Clock): the in-memory retries (1 s, 2 s, 4 s) run, later ones go back to
        // the store, due again later. Counted in memory: the store's leased count can pass 16 for a moment (a job that
        // failed leaves memory before its completion is written, flushDelay later; a claim may bring the next first).
        let mostHeld = 0
        for (let step = 0; step < 600 && (step < 60 || posts < 64); step++) {
          yield* TestClock.adjust("200 millis")
          yield* realWait(5)
          mostHeld = Math.max(mostHeld, dispatcher.held.size)
        }
        expect(posts).toBeGreaterThanOrEqual(64)
        expect(mostHeld).toBeGreaterThan(0)
        expect(mostHeld).toBeLessThanOrEqual(16)
        expect(Math.max(...limits)).toBeLessThanOrEqual(16)
      }).pipe(Effect.provide(context))
    }))
})
