import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Metric } from "effect"
import { TestClock } from "effect/testing"
import * as BacklogGauge from "../../src/metrics/BacklogGauge.js"
import { backlogWithStatus } from "../../src/metrics/Metrics.js"
import type { BacklogOptions } from "../../src/store/Model.js"
import { Outbox } from "../../src/store/Outbox.js"
import { Sources } from "../../src/store/Sources.js"
import * as StoreLayers from "../../src/store/Store.js"
import { startServer, waitUntil } from "../delivery/support.js"
import { adminToken, type App, startApp } from "../support/app.js"
import { track } from "../support/http.js"

/** Health, Prometheus metrics and the JSON 404 (REFERENCE §7). */

const get = (baseUrl: string, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}${path}`, { headers })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$/

/** Parses Prometheus text into `name{labels}` → value, failing on any line that is not valid. */
const parseSamples = (text: string): Map<string, number> => {
  const samples = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue
    const match = sampleLine.exec(line)
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`)
    const value = match[3] === "+Inf" ? Infinity : Number(match[3])
    if (Number.isNaN(value)) throw new Error(`not a number in: ${line}`)
    samples.set(`${match[1]}${match[2] ?? ""}`, value)
  }
  return samples
}

const scrape = (app: App) =>
  Effect.map(get(app.baseUrl, "/metrics"), (answer) => ({ ...answer, samples: parseSamples(answer.text) }))

const sample = (samples: Map<string, number>, key: string) => samples.get(key) ?? 0

/** Polls /metrics on real time until `done` holds. */
const scrapeUntil = (app: App, done: (samples: Map<string, number>) => boolean, what: string) =>
  Effect.gen(function*() {
    for (let waited = 0; waited <= 10_000; waited += 20) {
      const scraped = yield* scrape(app)
      if (done(scraped.samples)) return scraped
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting until ${what}`))
  })

describe("operations: health and 404", () => {
  it.live("GET /healthz answers 200 without any token", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const answer = yield* get(app.baseUrl, "/healthz")
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toContain("application/json")
      expect(JSON.parse(answer.text)).toStrictEqual({ status: "ok" })
    }))

  it.live("an unknown route, or a known path with the wrong method, is a JSON 404", () =>
    Effect.gen(function*() {
      const app = yield* startApp({ dispatch: false })
      const notFound = { success: false, code: "not_found", message: "no such route", errors: [] }
      for (const path of ["/", "/nope", "/v1/unknown", "/v1/track", "/healthz/deep"]) {
        const answer = yield* get(app.baseUrl, path)
        expect(answer.status, path).toBe(404)
        expect(answer.headers.get("content-type"), path).toContain("application/json")
        expect(JSON.parse(answer.text), path).toStrictEqual(notFound)
      }
      const post = yield* Effect.promise(() => fetch(`${app.baseUrl}/healthz`, { method: "POST" }))
      expect(post.status).toBe(404)
      expect(yield* Effect.promise(() => post.json())).toStrictEqual(notFound)
      const admin = yield* get(app.baseUrl, "/admin/nothing-here", { authorization: `Bearer ${adminToken}` })
      expect(admin.status).toBe(404)
      expect(JSON.parse(admin.text)).toStrictEqual(notFound)
    }))
})

describe("operations: /metrics", () => {
  it.live("Prometheus text with ingested, delivered, dead, attempts by outcome, latencies and backlog", () =>
    Effect.gen(function*() {
      const ok = yield* startServer((_request, response) => response.writeHead(200).end())
      const gone = yield* startServer((_request, response) => response.writeHead(410).end("gone"))
      const app = yield* startApp()
      yield* app.relaySources.putSource({
        id: "web",
        writeKey: "wk_metrics_ok",
        webhooks: { enabled: true, endpoints: [{ url: ok.url }] }
      })
      yield* app.relaySources.putSource({
        id: "legacy",
        writeKey: "wk_metrics_gone",
        webhooks: { enabled: true, endpoints: [{ url: gone.url }] }
      })

      const before = yield* scrape(app)
      expect(before.status).toBe(200)
      expect(before.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")

      expect(yield* track(app.baseUrl, "wk_metrics_ok", { userId: "u", event: "E", messageId: "metrics-1" })).toBe(200)
      expect(yield* track(app.baseUrl, "wk_metrics_ok", { userId: "u", event: "E", messageId: "metrics-2" })).toBe(200)
      expect(yield* track(app.baseUrl, "wk_metrics_gone", { userId: "u", event: "E", messageId: "metrics-3" }))
        .toBe(200)
      yield* waitUntil(() => ok.requests.length >= 2 && gone.requests.length >= 1, "three deliveries")

      const was = (key: string) => sample(before.samples, key)
      const after = yield* scrapeUntil(
        app,
        (samples) =>
          sample(samples, "hookrelay_jobs_delivered_total") >= was("hookrelay_jobs_delivered_total") + 2 &&
          sample(samples, "hookrelay_jobs_dead_total") >= was("hookrelay_jobs_dead_total") + 1,
        "the deliveries and the dead letter are counted"
      )
      const now = (key: string) => sample(after.samples, key)
      expect(now("hookrelay_messages_ingested_total")).toBeGreaterThanOrEqual(
        was("hookrelay_messages_ingested_total") + 3
      )
      expect(now("hookrelay_attempts_total{outcome=\"success\"}")).toBeGreaterThanOrEqual(
        was("hookrelay_attempts_total{outcome=\"success\"}") + 2
      )
      expect(now("hookrelay_attempts_total{outcome=\"permanent\"}")).toBeGreaterThanOrEqual(
        was("hookrelay_attempts_total{outcome=\"permanent\"}") + 1
      )
      expect(now("hookrelay_delivery_latency_seconds_count")).toBeGreaterThanOrEqual(
        was("hookrelay_delivery_latency_seconds_count") + 2
      )
      expect(now("hookrelay_delivery_latency_seconds_bucket{le=\"+Inf\"}")).toBe(
        now("hookrelay_delivery_latency_seconds_count")
      )
      expect(now("hookrelay_delivery_latency_seconds_sum")).toBeGreaterThan(0)
      expect(now("hookrelay_ingest_commit_seconds_count")).toBeGreaterThanOrEqual(
        was("hookrelay_ingest_commit_seconds_count") + 3
      )
      expect(now("hookrelay_ingest_commit_seconds_sum")).toBeGreaterThan(was("hookrelay_ingest_commit_seconds_sum"))

      // The histogram's buckets are cumulative: each count at least the one below it.
      const buckets = [...after.samples]
        .filter(([key]) => key.startsWith("hookrelay_delivery_latency_seconds_bucket{"))
        .map(([key, count]) => ({ le: Number(/le="([^"]+)"/.exec(key)![1]!.replace("+Inf", "Infinity")), count }))
        .sort((a, b) => a.le - b.le)
      expect(buckets.length).toBeGreaterThan(5)
      expect(buckets.at(-1)!.le).toBe(Infinity)
      for (let i = 1; i < buckets.length; i++) {
        expect(buckets[i]!.count).toBeGreaterThanOrEqual(buckets[i - 1]!.count)
      }

      for (
        const [name, type] of [
          ["hookrelay_messages_ingested_total", "counter"],
          ["hookrelay_jobs_delivered_total", "counter"],
          ["hookrelay_jobs_dead_total", "counter"],
          ["hookrelay_attempts_total", "counter"],
          ["hookrelay_delivery_latency_seconds", "histogram"],
          ["hookrelay_backlog_jobs", "gauge"]
        ] as const
      ) {
        expect(after.text).toContain(`# TYPE ${name} ${type}\n`)
        expect(after.text).toMatch(new RegExp(`^# HELP ${name} \\S`, "m"))
      }
      // The gauge is counted when the server starts, then every 5 s (its period is tested on TestClock below).
      for (const status of ["pending", "delivering", "dead"]) {
        expect(after.samples.has(`hookrelay_backlog_jobs{status="${status}"}`), status).toBe(true)
      }
    }))
})

describe("operations: backlog gauge", () => {
  const gaugeValue = (status: "pending" | "delivering" | "dead") =>
    Effect.map(Metric.value(backlogWithStatus(status)), (state) => state.value)

  it.effect("counts the outbox by status at start and then every 5 s on the Clock", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(StoreLayers.layerSqlite({ filename: ":memory:" }))
      const outbox = Context.get(context, Outbox)
      yield* Context.get(context, Sources).upsertSource({ id: "web", writeKey: "wk_gauge" }, 0)
      const entries = (ids: ReadonlyArray<string>) =>
        ids.map((id) => ({ messageId: id, body: new Uint8Array([123, 125]) }))
      yield* outbox.enqueue("web", entries(["a", "b"]), 0)

      const asked: Array<BacklogOptions | undefined> = []
      let answered = 0
      const recording = Context.add(
        context,
        Outbox,
        Outbox.of({
          ...outbox,
          backlog: (options) =>
            Effect.andThen(Effect.sync(() => asked.push(options)), outbox.backlog(options)).pipe(
              Effect.tap(() => Effect.sync(() => answered++))
            )
        })
      )
      // The count's answer comes from the SQLite thread, in real time: wait for it (the gauge is set in the same step).
      const counted = (n: number) =>
        Effect.promise(async () => {
          for (let waited = 0; answered < n && waited < 5_000; waited += 5) {
            await new Promise((resolve) => setTimeout(resolve, 5))
          }
        })
      yield* Layer.build(BacklogGauge.layer()).pipe(Effect.provide(recording))
      yield* TestClock.adjust("0 millis")
      yield* counted(1)
      // Never the delivered jobs: retention keeps them all, and the count would grow with every day of traffic.
      expect(asked).toStrictEqual([{ delivered: false }])
      expect(yield* gaugeValue("pending")).toBe(2)
      expect(yield* gaugeValue("delivering")).toBe(0)
      expect(yield* gaugeValue("dead")).toBe(0)

      // Work between two counts shows at the next count, not before.
      yield* outbox.enqueue("web", entries(["c", "d", "e"]), 0)
      const [claimed] = yield* outbox.claimDue("owner-1", 0, 2, 60_000)
      yield* TestClock.adjust("4999 millis")
      expect(answered).toBe(1)
      expect(yield* gaugeValue("pending")).toBe(2)
      yield* TestClock.adjust("1 millis")
      yield* counted(2)
      expect(yield* gaugeValue("pending")).toBe(3)
      expect(yield* gaugeValue("delivering")).toBe(2)

      yield* outbox.markDead("owner-1", claimed!.id, 5_000, "410 Gone")
      yield* TestClock.adjust("5 seconds")
      yield* counted(3)
      expect(yield* gaugeValue("delivering")).toBe(1)
      expect(yield* gaugeValue("dead")).toBe(1)
      expect(yield* gaugeValue("pending")).toBe(3)
    }))
})
