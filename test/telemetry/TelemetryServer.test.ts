import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { parseTraceparent } from "../../src/domain/TraceContext.js"
import { basicAuth, repoRoot, type ServerProcess, startServerProcess } from "../support/serverProcess.js"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./OtlpReceiver.js"

const writeKey = "wk_telemetry_01"

interface Delivery {
  readonly messageId: string
  readonly traceparent: string | undefined
}

/** A webhook receiver on loopback that keeps each delivery's message id and `traceparent` header. */
const startReceiver = (): Promise<{ server: Server; url: string; deliveries: Array<Delivery> }> =>
  new Promise((resolve, reject) => {
    const deliveries: Array<Delivery> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messageId: string }
        const header = request.headers.traceparent
        deliveries.push({ messageId: body.messageId, traceparent: typeof header === "string" ? header : undefined })
        response.writeHead(200).end()
      })
    })
    server.once("error", reject)
    server.listen(
      0,
      "127.0.0.1",
      () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries })
    )
  })

const waitUntil = async (condition: () => boolean, what: string, timeoutMillis = 20_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** SIGTERM: the server flushes what it holds and exits 0. */
const stopsCleanly = async (server: ServerProcess) => {
  server.child.kill("SIGTERM")
  expect(await server.exited).toBe(0)
}

/** The jobs the exported claim spans took, in all (a claim that found nothing makes no span). */
const claimedJobs = (spans: ReadonlyArray<ReceivedSpan>) =>
  spans.filter((span) => span.name === "hookrelay.claim").reduce(
    (jobs, span) => jobs + Number(span.attributes["hookrelay.batch.jobs"]),
    0
  )

// A client's own trace: the tracking request's span must be its child.
const clientTraceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const clientSpanId = "00f067aa0ba902b7"
const unsampledTraceId = "0af7651916cd43dd8448eb211c80319c"

describe("telemetry (a real server process, configured as a user would)", () => {
  const cleanup: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step()
  })

  const setup = async (env: Record<string, string>) => {
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-telemetry-"))
    cleanup.push(() => rmSync(directory, { recursive: true, force: true }))
    const receiver = await startReceiver()
    cleanup.push(() => new Promise<void>((done) => receiver.server.close(() => done())))
    const config = Path.join(directory, "config.json")
    writeFileSync(
      config,
      JSON.stringify({
        sources: [{ id: "traced", writeKey, webhooks: { enabled: true, endpoints: [{ url: receiver.url }] } }]
      })
    )
    const server = await startServerProcess({
      HOOKRELAY_DATA_DIR: Path.join(directory, "data"),
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      DATABASE_URL: "",
      ...env
    })
    cleanup.push(() => {
      server.child.kill("SIGKILL")
    })
    return { receiver, server }
  }

  const track = (server: ServerProcess, messageId: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/track`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basicAuth(writeKey), ...headers },
      body: JSON.stringify({ userId: "u1", event: "Traced", messageId })
    }).then(async (response) => {
      await response.arrayBuffer()
      return response.status
    })

  /** `setup` exporting to a loopback OTLP receiver, spans every 100 ms and metrics every 300 ms, and `env`. */
  const setupExporting = async (env: Record<string, string>) => {
    const otlp: OtlpReceiver = await startOtlpReceiver()
    cleanup.push(otlp.close)
    const started = await setup({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_METRIC_EXPORT_INTERVAL: "300",
      ...env
    })
    return { ...started, otlp }
  }

  it.live(
    "exports the spans of a message from its tracking request to its delivery, and sends `traceparent` on",
    () =>
      Effect.promise(async () => {
        const { otlp, receiver, server } = await setupExporting({
          OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=secret-1",
          OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "gzip",
          OTEL_SERVICE_NAME: "hookrelay-under-test"
        })
        expect(await track(server, "traced-1", { traceparent: `00-${clientTraceId}-${clientSpanId}-01` })).toBe(200)
        expect(await track(server, "untraced-client-2")).toBe(200)
        // A client that does not sample its trace: the default sampler follows it (parent-based).
        expect(await track(server, "unsampled-3", { traceparent: `00-${unsampledTraceId}-${clientSpanId}-00` })).toBe(
          200
        )
        await waitUntil(() => receiver.deliveries.length === 3, "the deliveries")

        const byKind = (spans: ReadonlyArray<ReceivedSpan>, kind: number) => spans.filter((span) => span.kind === kind)
        // OTLP span kinds: 2 server, 3 client, 1 internal.
        await waitUntil(
          () =>
            byKind(otlp.spans, 2).filter((span) => span.attributes["hookrelay.source.id"] === "traced").length === 2 &&
            byKind(otlp.spans, 3).length >= 2 && claimedJobs(otlp.spans) === 3 &&
            otlp.spans.some((span) => span.name === "hookrelay.complete"),
          "the spans"
        )
        for (const [messageId, clientParent] of [["traced-1", true], ["untraced-client-2", false]] as const) {
          const delivery = receiver.deliveries.find((delivery) => delivery.messageId === messageId)!
          const sent = parseTraceparent(delivery.traceparent)
          expect(sent, `traceparent on the delivery of ${messageId}`).toBeDefined()
          const attempt = otlp.spans.find((span) =>
            span.kind === 3 && span.attributes["hookrelay.message.id"] === messageId
          )!
          // The receiver's parent is the attempt's span, in the tracking request's trace.
          expect(sent).toMatchObject({ traceId: attempt.traceId, spanId: attempt.spanId, sampled: true })
          const request = otlp.spans.find((span) =>
            span.kind === 2 && span.spanId === attempt.parentSpanId && span.traceId === attempt.traceId
          )
          expect(request, `the tracking request's span of ${messageId}`).toBeDefined()
          expect(attempt.links).toEqual([
            expect.objectContaining({ traceId: request!.traceId, spanId: request!.spanId })
          ])
          expect(request!.attributes).toMatchObject({ "hookrelay.messages": 1, "http.request.method": "POST" })
          if (clientParent) expect(request).toMatchObject({ traceId: clientTraceId, parentSpanId: clientSpanId })
          else expect(request!.parentSpanId).toBeUndefined()
          expect(attempt).toMatchObject({ name: "POST", service: "hookrelay-under-test" })
          expect(attempt.attributes).toMatchObject({
            "http.request.method": "POST",
            "url.full": receiver.url,
            "server.address": "127.0.0.1",
            "http.response.status_code": 200,
            "hookrelay.attempt.number": 1,
            "hookrelay.attempt.outcome": "success"
          })
        }
        expect(otlp.spans.some((span) => span.name === "hookrelay.complete" && span.attributes["hookrelay.batch.jobs"]))
          .toBe(true)
        // The unsampled trace goes on to the receiver, not sampled, and no span of it is exported.
        const unsampled = receiver.deliveries.find((delivery) => delivery.messageId === "unsampled-3")!
        expect(parseTraceparent(unsampled.traceparent)).toMatchObject({ traceId: unsampledTraceId, sampled: false })
        expect(otlp.spans.filter((span) => span.traceId === unsampledTraceId)).toStrictEqual([])
        // OTEL_EXPORTER_OTLP_HEADERS reach the collector, spans gzipped as asked; the Effect metrics are exported too.
        expect(otlp.headers.every((headers) => headers["x-collector-token"] === "secret-1")).toBe(true)
        // Protobuf unless asked otherwise, as the OpenTelemetry specification recommends of exporters.
        expect(otlp.headers.every((headers) => headers["content-type"] === "application/x-protobuf")).toBe(true)
        expect(otlp.headers.some((headers) => headers["content-encoding"] === "gzip")).toBe(true)
        await waitUntil(() => otlp.metricNames.has("hookrelay_jobs_delivered_total"), "the metrics")

        await stopsCleanly(server)
      }),
    60_000
  )

  it.live(
    "exports JSON bodies when OTEL_EXPORTER_OTLP_PROTOCOL is http/json; a client's malformed b3 ids cannot break them",
    () =>
      Effect.promise(async () => {
        const { otlp, receiver, server } = await setupExporting({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })
        expect(await track(server, "json-1", { traceparent: `00-${clientTraceId}-${clientSpanId}-01` })).toBe(200)
        // The HTTP server takes b3 ids unchecked: quotes here would end a JSON string early.
        expect(await track(server, "b3-2", { "x-b3-traceid": "zz\"}]", "x-b3-spanid": "1\"" })).toBe(200)
        await waitUntil(() => receiver.deliveries.length === 2, "the deliveries")
        await waitUntil(
          () =>
            ["json-1", "b3-2"].every((id) =>
              otlp.spans.some((span) => span.kind === 3 && span.attributes["hookrelay.message.id"] === id)
            ) &&
            otlp.metricNames.has("hookrelay_messages_ingested_total"),
          "JSON spans and metrics"
        )
        // The b3 request's span started a trace of its own, which its delivery continues.
        const b3Attempt = otlp.spans.find((span) =>
          span.kind === 3 && span.attributes["hookrelay.message.id"] === "b3-2"
        )!
        expect(b3Attempt.traceId).toMatch(/^[0-9a-f]{32}$/)
        const b3Request = otlp.spans.find((span) => span.kind === 2 && span.spanId === b3Attempt.parentSpanId)
        expect(b3Request).toMatchObject({ traceId: b3Attempt.traceId, parentSpanId: undefined })
        const attempt = otlp.spans.find((span) =>
          span.kind === 3 && span.attributes["hookrelay.message.id"] === "json-1"
        )
        expect(attempt!.traceId).toBe(clientTraceId)
        expect(otlp.headers.every((headers) => headers["content-type"] === "application/json")).toBe(true)
        await stopsCleanly(server)
      }),
    60_000
  )

  it.live(
    "without an OTLP endpoint: no traceparent on deliveries, and HOOKRELAY_LOG_LEVEL=debug logs debug",
    () =>
      Effect.promise(async () => {
        const { receiver, server } = await setup({ HOOKRELAY_LOG_LEVEL: "DEBUG" })
        expect(await track(server, "plain-1", { traceparent: `00-${clientTraceId}-${clientSpanId}-01` })).toBe(200)
        await waitUntil(() => receiver.deliveries.length === 1, "the delivery")
        expect(receiver.deliveries[0]!.traceparent).toBeUndefined()
        // Effect 4's JSON lines name the level `level`.
        const debug = server.output().split("\n").filter((line) => line.includes("\"level\":\"DEBUG\""))
        expect(debug.some((line) => line.includes("\"telemetry\"") && line.includes("\"traces\":false"))).toBe(true)
        await stopsCleanly(server)
      }),
    60_000
  )

  it.live(
    "a wrong HOOKRELAY_LOG_LEVEL stops the start with a message naming the variable",
    () =>
      Effect.promise(async () => {
        const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
          cwd: repoRoot,
          env: { ...process.env, HOOKRELAY_LOG_LEVEL: "verbose", PORT: "0", DATABASE_URL: "" },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        const code = await new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
        expect(code).not.toBe(0)
        expect(output).toContain("HOOKRELAY_LOG_LEVEL")
        expect(output).not.toContain("listening")
      }),
    60_000
  )
})
