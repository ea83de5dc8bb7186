import { type ChildProcess, spawn } from "node:child_process"
import { createServer as createNetServer } from "node:net"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const repoRoot = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

/** A free TCP port on 127.0.0.1 (bound, then released). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createNetServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(port))
    })
  })

export interface ServerProcess {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
  /** Resolves with the exit code (or the signal's name). */
  readonly exited: Promise<number | string>
}

/**
 * The keys of the stored secrets a test server gets unless the test gives its own (PostgreSQL requires them; an empty
 * value leaves SQLite to its key file): docs/SECURITY.md.
 */
export const testSecretKeys = `test:${Buffer.alloc(32, 7).toString("base64")}`

/** Runs `src/main.ts` (what `npm start` compiles and runs) through tsx, in a process of its own, and waits for /readyz (ready: the handler attached and the store answering). */
export const startServerProcess = async (env: Record<string, string>): Promise<ServerProcess> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
    cwd: repoRoot,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), HOOKRELAY_SECRET_KEYS: testSecretKeys, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
  )
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  while (true) {
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })
      if (response.ok) break
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`the server did not start:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { url, child, output: () => output, exited }
}

export const basicAuth = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`

export const postBatch = async (url: string, writeKey: string, batch: ReadonlyArray<unknown>) => {
  const response = await fetch(`${url}/v1/batch`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basicAuth(writeKey) },
    body: JSON.stringify({ batch })
  })
  await response.arrayBuffer()
  return response.status
}
