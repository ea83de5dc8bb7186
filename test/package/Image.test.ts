import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { freePort, repoRoot } from "../support/serverProcess.js"

/**
 * The Dockerfile's steps, outside Docker (no daemon here) on the Node line of its base image: `npm pack` in the
 * checkout, `npm ci --omit=dev` from package.json and the lock in an empty folder, scripts/prune-runtime.mjs, the
 * package's files over it, then `node dist/cli.js serve` and the HEALTHCHECK's scripts/healthcheck.sh.
 * better-sqlite3's install script takes its binary from a loopback stand-in for its binary host, serving this
 * checkout's own build (as test/package/Install.test.ts does).
 */

const dockerfile = readFileSync(Path.join(repoRoot, "Dockerfile"), "utf8")
const npmCli = Path.join(Path.dirname(process.execPath), "../lib/node_modules/npm/bin/npm-cli.js")
const npm = existsSync(npmCli) ? [process.execPath, npmCli] : ["npm"]

const run = (command: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(command[0]!, command.slice(1), {
      cwd,
      env: { npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false", ...env },
      encoding: "utf8",
      timeout: 240_000,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
  )
const succeeded = async (ran: Promise<{ code: number; stdout: string; stderr: string }>, what: string) => {
  const { code, stderr, stdout } = await ran
  if (code !== 0) throw new Error(`${what} exited ${code}\n${stdout}\n${stderr}`)
  return stdout
}

let workspace = ""
let app = ""
let binaryHost: Server | undefined

beforeAll(async () => {
  workspace = mkdtempSync(Path.join(tmpdir(), "hookrelay-image-"))
  // Stage 1: the package.
  await succeeded(run([...npm, "pack", "--pack-destination", workspace], repoRoot), "npm pack")
  const tarball = Path.join(workspace, readdirSync(workspace).find((name) => name.endsWith(".tgz"))!)

  // better-sqlite3's prebuilt archive, served from loopback.
  const prebuilt = Path.join(workspace, "prebuilt")
  mkdirSync(Path.join(prebuilt, "build/Release"), { recursive: true })
  copyFileSync(
    Path.join(repoRoot, "node_modules/better-sqlite3/build/Release/better_sqlite3.node"),
    Path.join(prebuilt, "build/Release/better_sqlite3.node")
  )
  const archive = Path.join(workspace, "prebuilt.tar.gz")
  await succeeded(run(["tar", "-czf", archive, "-C", prebuilt, "build"], workspace), "tar")
  const archiveBytes = readFileSync(archive)
  binaryHost = createServer((_request, response) => response.writeHead(200).end(archiveBytes))
  await new Promise<void>((resolve) => binaryHost!.listen(0, "127.0.0.1", resolve))

  // Stage 2: production dependencies from package.json and the lock, pruned, then the package's files.
  app = Path.join(workspace, "app")
  mkdirSync(app)
  for (const file of ["package.json", "package-lock.json"]) {
    copyFileSync(Path.join(repoRoot, file), Path.join(app, file))
  }
  await succeeded(
    run([...npm, "ci", "--omit=dev", "--prefer-offline"], app, {
      ...process.env,
      npm_config_better_sqlite3_binary_host: `http://127.0.0.1:${(binaryHost.address() as AddressInfo).port}`
    }),
    "npm ci --omit=dev"
  )
  await succeeded(run([process.execPath, Path.join(repoRoot, "scripts/prune-runtime.mjs"), app], app), "prune")
  await succeeded(run(["tar", "xzf", tarball, "-C", app, "--strip-components=1"], app), "tar x")
}, 480_000)

afterAll(() => {
  binaryHost?.close()
  rmSync(workspace, { recursive: true, force: true })
})

describe("the image's steps", () => {
  it("are the Dockerfile's, on its Node line", () => {
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]!)
    expect(bases.every((base) => /^node:\d+\.\d+\.\d+-bookworm(-slim)?$/.test(base))).toBe(true)
    expect(bases.at(-1)).toMatch(/-slim$/)
    expect(new Set(bases.map((base) => base.slice("node:".length).split(".")[0]))).toEqual(
      new Set([process.versions.node.split(".")[0]])
    )
    // Dependencies from package.json and the lock before the sources.
    expect(dockerfile.indexOf("COPY package.json package-lock.json ./")).toBeLessThan(dockerfile.indexOf("COPY . ."))
    expect(dockerfile).toContain("RUN npm ci --omit=dev --no-audit --no-fund && node /tmp/prune-runtime.mjs /app")
    expect(dockerfile).toContain(`ENTRYPOINT ["node", "dist/cli.js"]`)
    expect(dockerfile).toMatch(/^HEALTHCHECK --interval=10s .* CMD \["\/usr\/local\/bin\/hookrelay-healthcheck"\]$/m)
  })

  it("leave what runs: no install-time packages, no build artefacts of better-sqlite3", () => {
    const modules = Path.join(app, "node_modules")
    expect(existsSync(Path.join(modules, "prebuild-install"))).toBe(false)
    expect(existsSync(Path.join(modules, "tar-fs"))).toBe(false)
    expect(readdirSync(Path.join(modules, "better-sqlite3")).sort()).toEqual(
      ["LICENSE", "README.md", "build", "lib", "package.json"]
    )
    expect(readdirSync(Path.join(modules, "better-sqlite3/build/Release"))).toEqual(["better_sqlite3.node"])
    expect(existsSync(Path.join(modules, "typescript"))).toBe(false)
    expect(existsSync(Path.join(app, "dist/cli.js"))).toBe(true)
    expect(existsSync(Path.join(app, "console/dist/index.html"))).toBe(true)
  })

  it("serve on SQLite in the data directory, answer the health check script, and exit 0 on SIGTERM", async () => {
    const port = await freePort()
    const { DATABASE_URL: _url, ...environment } = process.env
    const env = {
      ...environment,
      NODE_ENV: "production",
      HOST: "127.0.0.1",
      PORT: String(port),
      HOOKRELAY_DATA_DIR: Path.join(workspace, "data")
    }
    const healthcheck = () => run([Path.join(repoRoot, "scripts/healthcheck.sh")], app, { PORT: String(port) })
    // Nothing listening yet: the check fails.
    expect((await healthcheck()).code).toBe(1)
    const child = spawn(process.execPath, ["dist/cli.js", "serve"], {
      cwd: app,
      env,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    const exited = new Promise<number | string>((resolve) =>
      child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
    )
    try {
      const deadline = Date.now() + 60_000
      while (!output.includes("hookrelay listening") && child.exitCode === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(child.exitCode, output).toBe(null)
      expect(await healthcheck()).toMatchObject({ code: 0 })
      expect(existsSync(Path.join(workspace, "data/hookrelay.db"))).toBe(true)
    } finally {
      child.kill("SIGTERM")
    }
    expect(await exited, output).toBe(0)
  }, 120_000)
})
