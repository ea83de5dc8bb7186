import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { repoRoot } from "../delivery/support.js"
import { tempDirectory } from "../support/app.js"
import { freePort } from "../support/serverProcess.js"

import { hint } from "./ssrfSupport.js"

/** The SSRF guard as the server process applies it to `HOOKRELAY_CONFIG` at start (REFERENCE §8). */

describe("SSRF guard in the server process (src/main.ts)", () => {
  /** Runs `src/main.ts` with `env` until it exits by itself (at most 30 s): its exit code and output. */
  const runServer = (env: Record<string, string>) =>
    Effect.gen(function*() {
      const directory = yield* tempDirectory
      const port = yield* Effect.promise(freePort)
      return yield* Effect.callback<{ readonly code: number | null; readonly output: string }>((resume) => {
        const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/main.ts")], {
          cwd: repoRoot,
          env: {
            ...process.env,
            HOST: "127.0.0.1",
            PORT: String(port),
            HOOKRELAY_DATA_DIR: directory,
            DATABASE_URL: "",
            ...env
          },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
        const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
        child.once("exit", (code) => {
          clearTimeout(timer)
          resume(Effect.succeed({ code, output }))
        })
        return Effect.sync(() => child.kill("SIGKILL"))
      })
    })

  it.live("refuses to start with the sample config (a loopback webhook) unless private networks are allowed", () =>
    Effect.gen(function*() {
      const refused = yield* runServer({
        HOOKRELAY_CONFIG: "examples/config.sample.json",
        HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "false"
      })
      expect(refused.code).not.toBe(0)
      expect(refused.output).toContain(
        `sources[0].webhooks.endpoints[0].url: points at a refused address: 127.0.0.1 is loopback${hint}`
      )
      const invalid = yield* runServer({ HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "maybe" })
      expect(invalid.code).not.toBe(0)
      expect(invalid.output).toContain("HOOKRELAY_ALLOW_PRIVATE_NETWORKS")
    }))
})
