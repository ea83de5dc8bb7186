import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { freePort, repoRoot } from "../support/serverProcess.js"

// Asynchronous on purpose: a blocked event loop starves vitest's worker RPC.
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) =>
  new Promise<string>((resolve, reject) => {
    execFile(command, [...args], {
      cwd,
      env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", ...env },
      encoding: "utf8",
      timeout: 240_000,
      maxBuffer: 16 * 1024 * 1024
    }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout)
      else reject(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
    })
  })

describe("the published package", () => {
  it("packs, installs into a fresh project, type-checks its three entry points and delivers end to end", async () => {
    const workspace = mkdtempSync(Path.join(tmpdir(), "hookrelay-pack-"))
    try {
      await run("npm", ["pack", "--pack-destination", workspace], repoRoot)
      const tarball = readdirSync(workspace).find((name) => name.endsWith(".tgz"))!
      const project = Path.join(workspace, "consumer")
      mkdirSync(project)
      writeFileSync(
        Path.join(project, "package.json"),
        JSON.stringify({ name: "consumer", private: true, type: "module" })
      )
      // Dependencies come from npm's cache when it has them. Install scripts are skipped and
      // better-sqlite3's compiled binary is taken from this checkout (same version, same Node ABI):
      // compiling it again would cost two minutes of every test run and prove nothing about us.
      await run("npm", ["install", "--prefer-offline", "--ignore-scripts", Path.join(workspace, tarball)], project)
      const binary = "node_modules/better-sqlite3/build/Release/better_sqlite3.node"
      mkdirSync(Path.dirname(Path.join(project, binary)), { recursive: true })
      copyFileSync(Path.join(repoRoot, binary), Path.join(project, binary))

      // Deep imports are not part of the package.
      const deep = await run(
        "node",
        [
          "--input-type=module",
          "-e",
          "import('hookrelay/dist/relay/Relay.js').then(() => console.log('reachable'), (e) => console.log(e.code))"
        ],
        project
      )
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
      await run(process.execPath, [Path.join(repoRoot, "node_modules/typescript/bin/tsc"), "-p", "."], project)

      const output = await run(
        process.execPath,
        ["--import", Path.join(repoRoot, "node_modules/tsx/dist/loader.mjs"), "app.ts"],
        project,
        {
          RECEIVER_PORT: String(await startReceiverPort()),
          SERVER_PORT: String(await freePort()),
          DATA_DIR: Path.join(workspace, "data")
        }
      )
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
      const snippet = await run(process.execPath, ["snippet.mjs"], project, {
        PORT: String(batches.port),
        NODE_OPTIONS: ""
      })
      expect(snippet).toBe("")
      expect(batches.sizes).toStrictEqual([20, 20, 5])
      expect(batches.values).toStrictEqual(Array.from({ length: 45 }, (_, i) => i))
    } finally {
      rmSync(workspace, { recursive: true, force: true })
      stopReceiver()
    }
  }, 600_000)
})

import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

let receiver: Server | undefined
const startReceiverPort = () =>
  new Promise<number>((resolve) => {
    receiver = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(200).end())
    })
    receiver.listen(0, "127.0.0.1", () => resolve((receiver!.address() as AddressInfo).port))
  })
let batchRecorder: Server | undefined
/** Records the size and the `properties.i` of every batch POSTed to it. */
const startBatchRecorder = () =>
  new Promise<{ port: number; sizes: Array<number>; values: Array<number> }>((resolve) => {
    const sizes: Array<number> = []
    const values: Array<number> = []
    batchRecorder = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const batch = JSON.parse(Buffer.concat(chunks).toString("utf8")).batch as Array<{ properties: { i: number } }>
        sizes.push(batch.length)
        values.push(...batch.map((message) => message.properties.i))
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    batchRecorder.listen(
      0,
      "127.0.0.1",
      () => resolve({ port: (batchRecorder!.address() as AddressInfo).port, sizes, values })
    )
  })
const stopReceiver = () => {
  receiver?.close()
  batchRecorder?.close()
}
