import { afterAll, afterEach, describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { repoRoot, type ServerProcess, startServerProcess } from "../support/serverProcess.js"

// Un-awaited calls as analytics-node users write them, each scenario in a child process of its own
// with Node's default unhandled-rejection mode: one unhandled rejection there exits with code 1.

interface ChildResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const runChild = (script: string, env: Record<string, string>): Promise<ChildResult> =>
  new Promise((resolve) => {
    const { NODE_OPTIONS: _ignored, ...inherited } = process.env
    execFile(
      process.execPath,
      ["--import", "tsx", Path.join(repoRoot, "test/client/child", script)],
      { cwd: repoRoot, env: { ...inherited, ...env }, encoding: "utf8", timeout: 120_000, maxBuffer: 16 << 20 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stdout, stderr })
    )
  })

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks)))
    request.on("error", reject)
  })

interface Recorder {
  readonly port: number
  readonly server: Server
  /** Each request's parsed JSON body, in arrival order. */
  readonly bodies: Array<any>
}

/** A loopback HTTP server that records every JSON body and answers with `answer` (200 by default). */
const startRecorder = (
  answer: (body: Buffer) => Promise<number> = () => Promise.resolve(200)
): Promise<Recorder> =>
  new Promise((resolve) => {
    const bodies: Array<any> = []
    const server = createServer((request, response) => {
      readBody(request).then(async (body) => {
        bodies.push(JSON.parse(body.toString("utf8")))
        response.writeHead(await answer(body), { "content-type": "application/json" }).end("{}")
      }).catch(() => response.writeHead(500).end())
    })
    server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as AddressInfo).port, server, bodies }))
  })

const waitUntil = async (condition: () => boolean, what: string, timeoutMillis = 60_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const cleanup: Array<() => void> = []
afterEach(() => {
  for (const step of cleanup.splice(0).reverse()) step()
})
// The real server is started once for the file (a start under load takes a good part of its 30 s).
const cleanupAtEnd: Array<() => void> = []
afterAll(() => {
  for (const step of cleanupAtEnd.splice(0).reverse()) step()
})

const recorder = async (answer?: (body: Buffer) => Promise<number>, steps = cleanup) => {
  const started = await startRecorder(answer)
  steps.push(() => started.server.close())
  return started
}

/** The real server (src/main.ts in its own process) with one source whose webhook is `hookPort`. */
const realServer = async (writeKey: string, hookPort: number): Promise<ServerProcess> => {
  const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-client-"))
  cleanupAtEnd.push(() => rmSync(directory, { recursive: true, force: true }))
  const config = Path.join(directory, "config.json")
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{
        id: "web",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: `http://127.0.0.1:${hookPort}/hook` }] }
      }]
    })
  )
  const server = await startServerProcess({
    HOOKRELAY_DATA_DIR: Path.join(directory, "data"),
    HOOKRELAY_CONFIG: config,
    HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
    DATABASE_URL: ""
  })
  cleanupAtEnd.push(() => server.child.kill("SIGKILL"))
  return server
}

let real: Promise<{ readonly server: ServerProcess; readonly hooks: Recorder }> | undefined
/** The real server and the webhook receiver behind it, shared by the tests of this file. */
const realSetup = () =>
  real ??= recorder(undefined, cleanupAtEnd).then(async (hooks) => ({
    hooks,
    server: await realServer("wk_web", hooks.port)
  }))

/** Forwards each batch to the real server (recording it on the way): the server's answer is the client's. */
const proxyTo = (server: ServerProcess) =>
  recorder(async (body) => {
    const response = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Basic ${Buffer.from("wk_web:").toString("base64")}`
      },
      body
    })
    await response.arrayBuffer()
    return response.status
  })

const expectSnippetBatches = (bodies: ReadonlyArray<any>) => {
  expect(bodies.map((body) => body.batch.length)).toStrictEqual([20, 20, 5])
  const messages = bodies.flatMap((body) => body.batch)
  expect(messages.map((message) => message.properties.i)).toStrictEqual(Array.from({ length: 45 }, (_, i) => i))
  expect(messages.map((message) => message.userId)).toStrictEqual(Array.from({ length: 45 }, (_, i) => `u${i % 5}`))
}

describe("fire and forget (child processes, default unhandled-rejection mode)", () => {
  it("the snippet against a loopback receiver: 45 messages in batches of 20, 20 and 5, exit code 0", async () => {
    const receiver = await recorder()
    const child = await runChild("snippet.ts", { PORT: String(receiver.port) })
    expect(child.stderr).toBe("")
    expect(child.code).toBe(0)
    expectSnippetBatches(receiver.bodies)
  }, 60_000)

  it("the snippet against the real hookrelay server: all 45 accepted and delivered, exit code 0", async () => {
    const { hooks, server } = await realSetup()
    hooks.bodies.length = 0
    const proxy = await proxyTo(server)
    const child = await runChild("snippet.ts", { PORT: String(proxy.port), WRITE_KEY: "wk_web" })
    expect(child.stderr).toBe("")
    expect(child.code).toBe(0)
    expectSnippetBatches(proxy.bodies)
    await waitUntil(() => hooks.bodies.length >= 45, "45 webhooks")
    expect(hooks.bodies).toHaveLength(45)
    expect(hooks.bodies.map((body) => body.properties.i).sort((a, b) => a - b)).toStrictEqual(
      Array.from({ length: 45 }, (_, i) => i)
    )
  }, 90_000)

  it(
    "10 000 un-awaited calls from 50 tasks, close() racing the last: each call before close() delivered once",
    async () => {
      const receiver = await recorder()
      const child = await runChild("race.ts", { PORT: String(receiver.port) })
      expect(child.stderr).toBe("")
      expect(child.code).toBe(0)
      const report = JSON.parse(child.stdout.trim().split("\n").at(-1)!) as {
        before: Array<string>
        after: Array<string>
        refused: Array<string>
        dropped: number
      }
      expect(report.before).toHaveLength(9_975)
      expect(report.after).toHaveLength(25)
      expect(report.dropped).toBe(0)
      const delivered = receiver.bodies.flatMap((body) => body.batch.map((message: any) => message.messageId))
      expect(delivered).toHaveLength(9_975)
      expect(new Set(delivered)).toStrictEqual(new Set(report.before))
      // Every call after close() was refused, and the listener heard each refusal.
      expect(report.refused).toStrictEqual(report.after.map(() => "ClientClosed"))
    },
    120_000
  )

  it(
    "un-awaited refused calls (no user id, 33 KB, after close): the process stays up, the listener hears each with its field, the rest is delivered",
    async () => {
      const hooks = await recorder()
      const server = await realServer("wk_web", hooks.port)
      const proxy = await proxyTo(server)
      const child = await runChild("refusals.ts", { PORT: String(proxy.port), WRITE_KEY: "wk_web" })
      expect(child.stderr).toBe("")
      expect(child.code).toBe(0)
      expect(JSON.parse(child.stdout.trim().split("\n").at(-1)!)).toStrictEqual([
        { refused: "track", error: "InvalidMessage", path: "userId" },
        { refused: "track", error: "MessageTooLarge", path: "properties" },
        { refused: "track", error: "ClientClosed" },
        { delivered: ["valid-1", "page-1", "valid-2"] },
        { refused: "identify", error: "ClientClosed" }
      ])
      expect(proxy.bodies.flatMap((body) => body.batch.map((message: any) => message.messageId))).toStrictEqual([
        "valid-1",
        "page-1",
        "valid-2"
      ])
      await waitUntil(() => hooks.bodies.length >= 3, "3 webhooks")
      const page = hooks.bodies.find((body) => body.messageId === "page-1")
      // The page's traits arrive as its properties.
      expect(page).toMatchObject({
        type: "page",
        name: "Pricing",
        properties: { url: "https://example.com/pricing", title: "Pricing" }
      })
      expect(page.traits).toBeUndefined()
    },
    90_000
  )
})
