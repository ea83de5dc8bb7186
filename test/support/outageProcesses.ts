import { type ChildProcess, fork, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { createServer as createNetServer } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { repoRoot } from "./serverProcess.js"

/**
 * A hookrelay server that stops and starts again on the same SQLite data and the same port, a receiver that counts
 * deliveries per message id, and client processes talking to the parent over IPC: what the outage tests share.
 */

/**
 * A free loopback port below Linux's ephemeral range (32768–60999). While the server is down, clients keep connecting
 * to its port; a port inside that range can be handed to one of those connections as its own local port (a TCP
 * self-connect, which then holds the port the server must listen on again), or to another test's `freePort`.
 */
export const stablePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createNetServer()
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
    })
    if (free) return port
  }
  throw new Error("no free port from 20000 to 31999")
}

export interface RestartableServer {
  readonly url: string
  /** Starts the server on the port and waits for `/readyz`; resolves with the time (epoch ms) it answered. */
  readonly start: () => Promise<number>
  /** Sends `signal` to the running server and waits for it to exit; resolves with the exit code or signal name. */
  readonly stop: (signal: "SIGTERM" | "SIGKILL") => Promise<number | string>
  readonly output: () => string
  /** Kills whatever is running (cleanup). */
  readonly kill: () => void
}

/** The server as `nodeArgs` run it: `src/main.ts` through tsx by default (a benchmark passes the compiled `dist/main.js`). */
export const restartableServer = (
  port: number,
  env: Record<string, string>,
  nodeArgs: ReadonlyArray<string> = ["--import", "tsx", Path.join(repoRoot, "src/main.ts")]
): RestartableServer => {
  const url = `http://127.0.0.1:${port}`
  let child: ChildProcess | undefined
  let exited: Promise<number | string> = Promise.resolve("not started")
  let output = ""
  const start = async () => {
    const process_ = spawn(process.execPath, [...nodeArgs], {
      cwd: repoRoot,
      env: { ...process.env, HOST: "127.0.0.1", ...env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child = process_
    process_.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    process_.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    exited = new Promise((resolve) => process_.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")))
    const deadline = Date.now() + 60_000
    while (true) {
      try {
        const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })
        if (response.ok) return Date.now()
      } catch {
        // not listening yet
      }
      if (process_.exitCode !== null || process_.signalCode !== null || Date.now() > deadline) {
        process_.kill("SIGKILL")
        throw new Error(`the server did not start on port ${port}:\n${output}`)
      }
      await sleep(50)
    }
  }
  const stop = (signal: "SIGTERM" | "SIGKILL") => {
    child?.kill(signal)
    return exited
  }
  return { url, start, stop, output: () => output, kill: () => void child?.kill("SIGKILL") }
}

export interface Receiver {
  readonly server: Server
  /** Receipts per message id. */
  readonly deliveries: Map<string, number>
  /** Every delivered body, parsed (only with `keepBodies`). */
  readonly bodies: Array<Record<string, unknown>>
}

/** A webhook receiver on `port`: answers 200 and counts each delivery by its body's `messageId`. */
export const startReceiver = (port: number, keepBodies = false): Promise<Receiver> =>
  new Promise((resolve, reject) => {
    const deliveries = new Map<string, number>()
    const bodies: Array<Record<string, unknown>> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
        const id = String(body.messageId)
        deliveries.set(id, (deliveries.get(id) ?? 0) + 1)
        if (keepBodies) bodies.push(body)
        response.writeHead(200).end()
      })
    })
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve({ server, deliveries, bodies }))
  })

/** A temporary directory with SQLite data and a config of one source whose webhook is the receiver on `receiverPort`. */
export const outageDirectory = (prefix: string, writeKey: string, receiverPort: number) => {
  const directory = mkdtempSync(Path.join(tmpdir(), prefix))
  const config = Path.join(directory, "config.json")
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{
        id: "outage",
        writeKey,
        webhooks: { enabled: true, endpoints: [{ url: `http://127.0.0.1:${receiverPort}/hook` }] }
      }]
    })
  )
  return {
    env: {
      HOOKRELAY_DATA_DIR: Path.join(directory, "data"),
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      DATABASE_URL: ""
    },
    remove: () => rmSync(directory, { recursive: true, force: true })
  }
}

/** A TypeScript child script run through tsx with an IPC channel; `next(type)` waits for its next message of a type. */
export const forkChild = (script: string, env: Record<string, string>) => {
  const child = fork(Path.join(repoRoot, script), [], {
    cwd: repoRoot,
    execArgv: ["--import", "tsx"],
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe", "ipc"]
  })
  let output = ""
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
  )
  const next = <T>(type: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const onMessage = (message: { type: string }) => {
        if (message.type !== type) return
        child.off("message", onMessage)
        child.off("exit", onExit)
        resolve(message as T)
      }
      const onExit = (code: number | null) =>
        reject(new Error(`${script} exited with ${code} before "${type}":\n${output}`))
      child.on("message", onMessage)
      child.once("exit", onExit)
    })
  return { child, next, exited, output: () => output }
}

export const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))

export const waitUntil = async (condition: () => boolean, what: string, timeoutMillis: number) => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

/** `promise`, or a failure naming `what` once `deadline` (epoch ms) has passed. */
export const within = <T>(promise: Promise<T>, deadline: number, what: () => string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what()}`)), Math.max(0, deadline - Date.now()))
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}
