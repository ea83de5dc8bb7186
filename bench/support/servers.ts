/**
 * The servers the ingest benchmarks load, each in a process of its own: hookrelay compiled, as `npm start` runs it,
 * and the two floors (`plainServer.mjs`, `effectServer.mjs`) that read and parse a body and answer at once.
 */
import { type ChildProcess, fork, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../../test/support/serverProcess.js"
import { repoRoot, waitFor } from "./processes.js"

/** Compiles the server (src → dist when stale), as `npm start` does before it runs. */
export const buildServer = () => {
  const build = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "scripts/server-build.ts")], {
    cwd: repoRoot,
    stdio: "inherit"
  })
  if (build.status !== 0) throw new Error("the server build failed")
}

/** User and system CPU a process has used, in µs (`/proc/<pid>/stat`, clock ticks of 10 ms). */
/** CPU time (user + system, µs) in a proc(5) `stat` file. */
const statCpuMicros = (path: string): number => {
  // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th of them.
  const fields = readFileSync(path, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** A process's CPU time, all its threads. */
export const processCpuMicros = (pid: number): number => statCpuMicros(`/proc/${pid}/stat`)

/** The CPU time of a process's main thread (the event loop: JavaScript, parsing, sockets). */
export const mainThreadCpuMicros = (pid: number): number => statCpuMicros(`/proc/${pid}/task/${pid}/stat`)

/** The most RSS a process has had (`VmHWM`), in bytes. */
export const peakRssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
}

export interface HookrelayProcess {
  readonly url: string
  readonly child: ChildProcess
  readonly stop: () => Promise<void>
}

/**
 * `entry` (the compiled `dist/main.js` by default) on plain node with `nodeArgs` before it, listening on a free
 * loopback port; resolves once `/readyz` answers 200. `stdout`: a file for what the server prints (else dropped).
 */
export const startHookrelay = async (options: {
  readonly env: Record<string, string>
  readonly entry?: string | undefined
  readonly nodeArgs?: ReadonlyArray<string> | undefined
  readonly stdout?: string | undefined
  /** How long the server may take to answer `/healthz` (default 30 s; a shared, loaded machine may need longer). */
  readonly startTimeoutMillis?: number | undefined
}): Promise<HookrelayProcess> => {
  const port = await freePort()
  const child = spawn(process.execPath, [
    ...(options.nodeArgs ?? []),
    "--enable-source-maps",
    options.entry ?? join(repoRoot, "dist/main.js")
  ], {
    cwd: repoRoot,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), ...options.env },
    stdio: ["ignore", options.stdout !== undefined ? openSync(options.stdout, "w") : "ignore", "inherit"]
  })
  const url = `http://127.0.0.1:${port}`
  await waitFor(
    async () => {
      try {
        return (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) })).ok
      } catch {
        return false
      }
    },
    options.startTimeoutMillis ?? 30_000,
    50
  ).catch((error: unknown) => {
    // Not left running once the benchmark gives up on it.
    child.kill("SIGKILL")
    throw error
  })
  const stop = () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve())
      child.kill("SIGTERM")
    })
  return { url, child, stop }
}

export interface FloorProcess {
  readonly url: string
  readonly child: ChildProcess
  readonly stop: () => void
}

/** A floor server (`bench/support/<script>`) in a process of its own, on an ephemeral loopback port. */
export const startFloor = async (script: "plainServer.mjs" | "effectServer.mjs"): Promise<FloorProcess> => {
  const child = fork(join(repoRoot, "bench/support", script), [], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once("error", reject)
    child.once("message", (message: { port: number }) => resolve(message.port))
  })
  return { url: `http://127.0.0.1:${port}`, child, stop: () => child.disconnect() }
}

/**
 * A temporary directory holding hookrelay's SQLite data and a `HOOKRELAY_CONFIG` file with one source whose webhook
 * is `hookUrl` (loopback, so private networks are allowed); `env` runs hookrelay on them, `remove` deletes them.
 */
export const benchSetup = (options: {
  readonly sourceId: string
  readonly writeKey: string
  readonly hookUrl: string
  readonly webhooksEnabled?: boolean | undefined
}) => {
  const directory = mkdtempSync(join(tmpdir(), `hookrelay-bench-${options.sourceId}-`))
  const config = join(directory, "config.json")
  writeFileSync(
    config,
    JSON.stringify({
      sources: [{
        id: options.sourceId,
        writeKey: options.writeKey,
        webhooks: { enabled: options.webhooksEnabled ?? true, endpoints: [{ url: options.hookUrl }] }
      }]
    })
  )
  return {
    directory,
    env: {
      HOOKRELAY_CONFIG: config,
      HOOKRELAY_DATA_DIR: join(directory, "data"),
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
      DATABASE_URL: ""
    },
    remove: () => rmSync(directory, { recursive: true, force: true })
  }
}
