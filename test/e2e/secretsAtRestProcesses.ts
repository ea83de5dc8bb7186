import { spawn } from "node:child_process"
import { createHmac, createPrivateKey, createPublicKey, randomBytes, verify } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { leaked, secretSource } from "../store/secretsAtRestSupport.js"
import { basicAuth, freePort, repoRoot, type ServerProcess, startServerProcess } from "../support/serverProcess.js"

/** Real server processes with sealed secrets: a receiver that checks every signature, and the admin calls. */

export const adminToken = "adm_sealed_0123456789abcdef"

export interface Received {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
}

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  readonly close: () => Promise<void>
}

export const startReceiver = (): Promise<Receiver> =>
  new Promise((resolve, reject) => {
    const received: Array<Received> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)])
        )
        received.push({ path: request.url ?? "", headers, body: Buffer.concat(chunks) })
        response.writeHead(200).end()
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      }))
  })

const pkcs8Prefix = Buffer.from("302e020100300506032b657004220420", "hex")

const hmacV1 = (secret: string, content: Buffer) =>
  `v1,${createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(content).digest("base64")}`

/** The source of `secretSource` with its URLs on `receiver`: the `webhooks` destination at /a, the other at /b. */
export const sealedSource = (receiver: Receiver) => {
  const made = secretSource(`${receiver.url}/a`)
  const second = made.source.destinations![0]!
  const source = {
    ...made.source,
    destinations: [{ ...second, endpoints: [{ ...second.endpoints[0]!, url: `${receiver.url}/b` }] }]
  }
  return { ...made, source }
}

/** Why a delivery does not verify with the secrets it should be signed with, or undefined when it does. */
export const verifyDelivery = (
  delivery: Received,
  secrets: ReturnType<typeof secretSource>["secrets"]
): string | undefined => {
  const content = Buffer.concat([
    Buffer.from(`${delivery.headers["webhook-id"]}.${delivery.headers["webhook-timestamp"]}.`),
    delivery.body
  ])
  const signatures = (delivery.headers["webhook-signature"] ?? "").split(" ")
  if (delivery.path === "/a") {
    if (delivery.headers["authorization"] !== secrets.token) return "the static header is not the stored one"
    const expected = createHmac("sha1", secrets.shared).update(delivery.body).digest("hex")
    if (delivery.headers["x-signature"] !== expected) return "X-Signature does not verify"
    for (const secret of [secrets.current, secrets.rotated]) {
      if (!signatures.includes(hmacV1(secret, content))) return "a v1 signature is missing"
    }
    const seed = Buffer.from(secrets.privateKey.slice("whsk_".length), "base64")
    const publicKey = createPublicKey(
      createPrivateKey({ key: Buffer.concat([pkcs8Prefix, seed]), format: "der", type: "pkcs8" })
    )
    const v1a = signatures.find((signature) => signature.startsWith("v1a,"))
    if (v1a === undefined || !verify(null, content, publicKey, Buffer.from(v1a.slice(4), "base64"))) {
      return "the v1a signature does not verify"
    }
    return undefined
  }
  if (delivery.headers["x-token"] !== secrets.otherToken) return "the static header is not the stored one"
  return signatures.includes(hmacV1(secrets.other, content)) ? undefined : "the v1 signature does not verify"
}

export const admin = async (server: ServerProcess, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${adminToken}`,
      ...(body !== undefined && { "content-type": "application/json" })
    },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, text }
}

/** Sends `count` track messages in batches of 100. */
export const track = async (server: ServerProcess, writeKey: string, count: number, prefix: string) => {
  for (let start = 0; start < count; start += 100) {
    const batch = Array.from({ length: Math.min(100, count - start) }, (_, index) => ({
      type: "track",
      userId: "u",
      event: "Sealed",
      messageId: `${prefix}-${start + index}`
    }))
    const response = await fetch(`${server.url}/v1/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: basicAuth(writeKey) },
      body: JSON.stringify({ batch })
    })
    await response.arrayBuffer()
    if (response.status !== 200) throw new Error(`batch answered ${response.status}`)
  }
}

export const waitUntil = async (condition: () => boolean | Promise<boolean>, what: string, millis = 60_000) => {
  const deadline = Date.now() + millis
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/** `hookrelay_secret_decryptions_total` on the server's /metrics (0 before its first decryption). */
export const decryptions = async (server: ServerProcess): Promise<number> => {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const line = text.split("\n").find((sample) => sample.startsWith("hookrelay_secret_decryptions_total "))
  return line === undefined ? 0 : Number(line.split(" ")[1])
}

export const serverEnv = (env: Record<string, string>): Record<string, string> => ({
  HOOKRELAY_ADMIN_TOKEN: adminToken,
  HOOKRELAY_ALLOW_PRIVATE_NETWORKS: "true",
  ...env
})

export const start = (env: Record<string, string>) => startServerProcess(serverEnv(env))

export const stop = async (server: ServerProcess) => {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill("SIGTERM")
  await server.exited
}

export interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the `hookrelay` command (`src/cli.ts`) with `args` until it exits. */
export const runCli = async (args: ReadonlyArray<string>, env: Record<string, string>): Promise<Finished> => {
  const port = await freePort()
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", Path.join(repoRoot, "src/cli.ts"), ...args], {
      cwd: repoRoot,
      env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), ...serverEnv(env) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

export const newKey = (id: string) => `${id}:${randomBytes(32).toString("base64")}`

export { leaked }
