import { assert, describe, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Effect } from "effect"
import { Attempts } from "../../src/store/Attempts.js"
import { DeadLetters } from "../../src/store/DeadLetters.js"
import { Endpoints } from "../../src/store/Endpoints.js"
import type { EnqueueEntry } from "../../src/store/index.js"
import { Outbox } from "../../src/store/Outbox.js"
import type { StoreServices } from "../../src/store/Store.js"
import { body, T0 } from "./storeSuite.js"

/** Endpoint health from recorded attempts, disabled URLs, and bulk dead-letter recovery. Run against every store. */

const A = "https://a.example/hook"
const B = "https://b.example/hook"

const tracked = (messageId: string): EnqueueEntry => ({
  messageId,
  userId: "u",
  type: "track",
  event: "Clicked",
  body: body(JSON.stringify({ messageId, type: "track", event: "Clicked" }))
})

const retired = (url: string) => [{ tag: "retired", url, attempts: 3, why: "out-of-window" }]

export const endpointStoreSuite = (fresh: () => Layer.Layer<StoreServices, unknown>) => {
  const test = <A, E>(name: string, self: Effect.Effect<A, E, StoreServices>) =>
    it.live(name, () => Effect.provide(self, fresh()))

  describe("endpoints: health, disabled URLs, bulk recovery", () => {
    test(
      "statistics and last success/failure come from the attempts of the endpoint: its URL, source and destination",
      Effect.gen(function*() {
        const attempts = yield* Attempts
        const endpointRecords = yield* Endpoints
        const outbox = yield* Outbox
        // One URL, three endpoints: the attempts of each are its jobs'.
        const job = (sourceId: string, destinationId: string) =>
          Effect.map(
            outbox.insertJobs([{ sourceId, destinationId, messageId: "m", kind: "audience", body: body("{}") }], T0),
            (ids) => ids[0]!
          )
        const web = yield* job("web", "webhooks")
        const crm = yield* job("web", "crm")
        const other = yield* job("other", "webhooks")
        const durations = [10, 20, 30, 40, 1000]
        yield* attempts.recordAttempts([
          ...durations.map((durationMs, i) => ({
            jobId: web,
            url: A,
            attempt: i + 1,
            startedAt: T0 + i,
            durationMs,
            outcome: i === 4 ? "retryable" as const : "success" as const,
            error: i === 4 ? "connection refused" : null
          })),
          { jobId: web, url: A, attempt: 1, startedAt: T0 - 10_000, durationMs: 5, outcome: "success" },
          { jobId: web, url: B, attempt: 1, startedAt: T0, durationMs: 5, outcome: "success" },
          { jobId: crm, url: A, attempt: 1, startedAt: T0 + 50, durationMs: 7, outcome: "permanent", statusCode: 400 },
          { jobId: other, url: A, attempt: 1, startedAt: T0 + 60, durationMs: 9, outcome: "success" }
        ])
        const webA = { sourceId: "web", destinationId: "webhooks", url: A }
        const crmA = { sourceId: "web", destinationId: "crm", url: A }
        const otherA = { sourceId: "other", destinationId: "webhooks", url: A }
        const stats = yield* endpointRecords.endpointStats(webA, T0)
        assert.deepStrictEqual(stats, { attempts: 5, successes: 4, p50LatencyMs: 30, p99LatencyMs: 1000 })
        assert.deepStrictEqual(yield* endpointRecords.endpointStats(webA, T0 + 100), {
          attempts: 0,
          successes: 0,
          p50LatencyMs: null,
          p99LatencyMs: null
        })
        assert.deepStrictEqual(yield* endpointRecords.endpointLastAttempts(webA), {
          lastSuccessAt: T0 + 3,
          lastFailureAt: T0 + 4,
          lastFailure: "connection refused"
        })
        assert.deepStrictEqual(yield* endpointRecords.endpointStats(crmA, T0), {
          attempts: 1,
          successes: 0,
          p50LatencyMs: 7,
          p99LatencyMs: 7
        })
        assert.deepStrictEqual(yield* endpointRecords.endpointLastAttempts(crmA), {
          lastSuccessAt: null,
          lastFailureAt: T0 + 50,
          lastFailure: "HTTP 400"
        })
        assert.deepStrictEqual(yield* endpointRecords.endpointLastAttempts(otherA), {
          lastSuccessAt: T0 + 60,
          lastFailureAt: null,
          lastFailure: null
        })
        assert.strictEqual((yield* endpointRecords.endpointStats({ ...webA, url: B }, T0)).attempts, 1)
      })
    )

    test(
      "a disabled endpoint (source, destination, URL) is kept once and enabled again; a URL alone takes every one",
      Effect.gen(function*() {
        const endpointRecords = yield* Endpoints
        const web = { sourceId: "web", destinationId: "webhooks", url: A }
        const crm = { sourceId: "web", destinationId: "crm", url: A }
        const other = { sourceId: "other", destinationId: "webhooks", url: A }
        yield* endpointRecords.disableEndpoint(web, T0, "HTTP 410 Gone")
        yield* endpointRecords.disableEndpoint(web, T0 + 5, "again")
        yield* endpointRecords.disableEndpoint(crm, T0 + 6, "by hand")
        yield* endpointRecords.disableEndpoint(other, T0 + 7, "by hand")
        assert.deepStrictEqual(yield* endpointRecords.disabledEndpoints(), [
          { ...other, disabledAt: T0 + 7, reason: "by hand" },
          { ...crm, disabledAt: T0 + 6, reason: "by hand" },
          { ...web, disabledAt: T0, reason: "HTTP 410 Gone" }
        ])
        assert.deepStrictEqual(yield* endpointRecords.enableEndpoints(web), [web])
        assert.deepStrictEqual(yield* endpointRecords.enableEndpoints(web), [])
        const rest = yield* endpointRecords.enableEndpoints({ url: A })
        assert.deepStrictEqual([...rest].sort((a, b) => a.sourceId.localeCompare(b.sourceId)), [other, crm])
        assert.deepStrictEqual(yield* endpointRecords.disabledEndpoints(), [])
      })
    )

    test(
      "bulk replay and purge take only the filtered dead letters; a dry run counts what the real run does",
      Effect.gen(function*() {
        const outbox = yield* Outbox
        const deadLetters = yield* DeadLetters
        const endpointRecords = yield* Endpoints
        yield* outbox.enqueue("web", ["a1", "a2", "b1", "a3"].map(tracked), T0)
        yield* outbox.enqueue("other", [tracked("o1")], T0)
        const jobs = yield* outbox.claimDue("w", T0, 10, 60_000)
        const id = (messageId: string) => jobs.find((job) => job.messageId === messageId)!.id
        const dead = (messageId: string, at: number, url: string) => ({
          _tag: "Dead" as const,
          jobId: id(messageId),
          at,
          lastError: "every endpoint failed",
          firstAttemptAt: T0,
          endpointState: retired(url)
        })
        yield* outbox.completeMany("w", [
          dead("a1", T0 + 100, A),
          dead("a2", T0 + 200, A),
          dead("b1", T0 + 200, B),
          dead("a3", T0 + 300, A),
          dead("o1", T0 + 200, A)
        ])
        const filter = { sourceId: "web", url: A, since: T0 + 150, until: T0 + 400 }
        const counted = yield* endpointRecords.replayDeadLetters(filter, T0 + 1000, true)
        assert.strictEqual(counted, 2)
        assert.strictEqual(yield* endpointRecords.replayDeadLetters(filter, T0 + 1000, false), counted)
        const left = yield* deadLetters.listDeadLetters({ limit: 10 })
        assert.deepStrictEqual(left.map((job) => job.messageId).sort(), ["a1", "b1", "o1"])
        assert.strictEqual(yield* endpointRecords.purgeDeadLettersMatching({ sourceId: "web" }, true), 2)
        assert.strictEqual(yield* endpointRecords.purgeDeadLettersMatching({ sourceId: "web" }, false), 2)
        const after = yield* deadLetters.listDeadLetters({ limit: 10 })
        assert.deepStrictEqual(after.map((job) => job.messageId), ["o1"])
        const replayed = yield* outbox.claimDue("w", T0 + 1000, 10, 60_000)
        assert.deepStrictEqual(replayed.map((job) => job.messageId).sort(), ["a2", "a3"])
      })
    )
  })
}
