import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { basicAuth, freePort, repoRoot, type ServerProcess, startServerProcess } from "../support/serverProcess.js"

/**
 * The README's receiver (examples/verify-receiver.ts, shown there verbatim) against the real server, each in a
 * process of its own: it verifies hookrelay's deliveries with the `standardwebhooks` package, and a rotation keeps
 * it verifying until its old secret expires.
 */

const example = Path.join(repoRoot, "examples/verify-receiver.ts")

interface Receiver {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
}

const startReceiver = async (secret: string): Promise<Receiver> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["--import", "tsx", example], {
    cwd: repoRoot,
    env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  await waitUntil(() => output.includes(`receiver on ${port}`), "the receiver listens")
  return { url: `http://127.0.0.1:${port}`, child, output: () => output }
}

const waitUntil = async (condition: () => boolean, what: string, timeoutMillis = 20_000) => {
  const deadline = Date.now() + timeoutMillis
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const cleanups: Array<() => void> = []
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!()
})

describe("README: a receiver verifies hookrelay's deliveries with standardwebhooks", () => {
  it("the README shows the example as it runs", () => {
    const readme = readFileSync(Path.join(repoRoot, "README.md"), "utf8")
    expect(readme).toContain(readFileSync(example, "utf8").trim())
  })

  it("verifies a delivery, and goes on verifying through a rotation", async () => {
    const directory = mkdtempSync(Path.join(tmpdir(), "hookrelay-readme-"))
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }))
    const adminToken = "readme-admin-token-0123456789"
    const secret = "whsec_" + Buffer.alloc(32, 9).toString("base64")
    const old = await startReceiver(secret)
    cleanups.push(() => void old.child.kill("SIGKILL"))
    const configFile = Path.join(directory, "config.json")
    writeFileSync(
      configFile,
      JSON.stringify({
        sources: [{
          id: "web",
          writeKey: "wk_readme_0123456789",
          webhooks: {
            enabled: true,
            signing: "standard",
            signingSecrets: [{ secret }],
            endpoints: [{ url: `${old.url}/hook` }]
          }
        }]
      })
    )
    const server: ServerProcess = await startServerProcess({
      DATABASE_URL: "",
      HOOKRELAY_DATA_DIR: Path.join(directory, "data"),
      HOOKRELAY_CONFIG: configFile,
      HOOKRELAY_ADMIN_TOKEN: adminToken,
      HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true"
    })
    cleanups.push(() => void server.child.kill("SIGKILL"))
    const send = async (messageId: string) => {
      const response = await fetch(`${server.url}/v1/track`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: basicAuth("wk_readme_0123456789") },
        body: JSON.stringify({ userId: "u-1", event: "Signed Up", messageId })
      })
      expect(response.status).toBe(200)
    }

    await send("readme-1")
    await waitUntil(() => old.output().includes("verified readme-1"), "the first delivery verified")

    // Rotation: the new secret, shown once, goes to a receiver of its own; the old one keeps verifying meanwhile.
    const rotated = await fetch(`${server.url}/admin/sources/web/secrets/rotate`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({ keepOldFor: "1 hour" })
    })
    expect(rotated.status).toBe(200)
    const { secret: fresh } = await rotated.json() as { secret: string }
    const next = await startReceiver(fresh)
    cleanups.push(() => void next.child.kill("SIGKILL"))
    await send("readme-2")
    await waitUntil(() => old.output().includes("verified readme-2"), "verified with the old secret during the overlap")
    const delivered = await fetch(`${server.url}/admin/messages/readme-2`, {
      headers: { authorization: `Bearer ${adminToken}` }
    })
    expect(delivered.status).toBe(200)
    expect(old.output()).not.toContain("refused")

    // The receiver moves to the new secret (here: a new receiver at a new URL); PUT leaves the secrets as they are.
    const moved = await fetch(`${server.url}/admin/sources/web`, {
      method: "PUT",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        writeKey: "wk_readme_0123456789",
        webhooks: { enabled: true, signing: "standard", endpoints: [{ url: `${next.url}/hook` }] }
      })
    })
    const view = await moved.json() as { webhooks: { signingSecrets: Array<{ expiresAt: string | null }> } }
    expect(view.webhooks.signingSecrets.map((s) => s.expiresAt === null)).toStrictEqual([true, false])
    // Settings changes reach the dispatcher within 2 s.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    await send("readme-3")
    await waitUntil(() => next.output().includes("verified readme-3"), "verified with the new secret")
  })
})
